"""TE computes for relay operators: pool (registered into strategies.STRATEGIES)."""
