"""Self-play training: the run's config, the network and PPO update, rollouts, seating, metrics, checkpoints and the machinery of long runs."""
