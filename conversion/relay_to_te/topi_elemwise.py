"""TE computes for relay operators: elemwise (registered into strategies.STRATEGIES)."""
