"""Provisioning: kickstarts rendered from templates, and netboot files for the lab's TFTP root."""
