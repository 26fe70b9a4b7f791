"""TE computes for relay operators: qnn (registered into strategies.STRATEGIES)."""
