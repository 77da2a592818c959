"""Views: parse input, call one use case, return what it returns."""
