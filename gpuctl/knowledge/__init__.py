"""Knowledge as data: SKUs, instance types, message patterns, each entry with its source."""
