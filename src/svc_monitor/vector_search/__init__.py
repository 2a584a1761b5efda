"""Vector search: the search indexes of each watched server, their health and history."""
