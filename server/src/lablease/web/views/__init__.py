"""Page views: read the form or query, call one use case (services/), answer Render or Redirect."""
