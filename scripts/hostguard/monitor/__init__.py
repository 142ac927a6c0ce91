"""The monitors: the host's and the containers' checks, the container runtime's calls and the alert policy."""
