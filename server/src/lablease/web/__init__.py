"""HTML pages for people, on the same werkzeug application as the API (see README.md here)."""
