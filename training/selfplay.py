"""``python -m training.selfplay``: runs :func:`training.learn.selfplay_command.main`."""

import sys

from training.learn.selfplay_command import main

if __name__ == "__main__":
    main(sys.argv[1:])
