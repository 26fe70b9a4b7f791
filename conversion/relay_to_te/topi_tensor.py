"""TE computes for relay operators: tensor creation, indexing, sorting (registered into strategies.STRATEGIES)."""
