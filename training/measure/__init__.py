"""Measuring agents against each other: matches with rotating seats and duplicate deals, on one machine or a Ray cluster, their statistics, leagues and ratings."""
