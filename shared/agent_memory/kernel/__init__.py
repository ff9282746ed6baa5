"""The shared kernel every layer uses: ids, errors, time, storage keys, cursors and deadlines."""
