"""The reliability suite: poison input, crashes, concurrency, damage, tampering, full disks, symlinks."""
