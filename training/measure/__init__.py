"""Measuring agents against each other: matches with rotating seats and duplicate deals, in one
process, several or on a Ray cluster; their statistics, leagues and ratings. The wing at the
bottom: it imports no other."""
