"""Self-play training: the run's config, the network and its PPO update, rollouts, who sits in
which seat, metrics, checkpoints, and what long runs need (devices, seeds, run folders, Ctrl-C)."""
