"""Users, groups and API tokens: who acts, and what each process remembers of them for a few seconds."""
