"""The lab's things and their rules: systems and their inventory, architectures, distro trees, health
checks and health, pools and access policies, Beaker's CSV exchange."""
