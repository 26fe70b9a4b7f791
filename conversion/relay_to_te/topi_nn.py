"""TE computes for relay operators: nn (registered into strategies.STRATEGIES)."""
