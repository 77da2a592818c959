"""Installing systems: installations, the durable command queue (power, netboot), guest recipes, and the
labs whose agents take their commands."""
