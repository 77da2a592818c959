"""Pure rules of lablease: no I/O, no clock, no third-party imports."""
