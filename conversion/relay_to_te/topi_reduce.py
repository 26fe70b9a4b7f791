"""TE computes for relay operators: reduce (registered into strategies.STRATEGIES)."""
