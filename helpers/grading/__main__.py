"""``python -m helpers.grading``: grade a folder of submissions (see :mod:`helpers.grading`)."""

if __name__ == "__main__":
    from helpers.grading.cli import main

    raise SystemExit(main())
