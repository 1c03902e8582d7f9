"""The browser app behind ``python -m training.serve``: routes (:mod:`.app`), the person's
games (:mod:`.games`), JSON views of states and replays (:mod:`.views`) and the static
pages in ``static/`` (plain HTML, CSS and JavaScript: no build step)."""
