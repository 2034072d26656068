# Installation of the library (component "dev"): public headers, layer libraries, the exported
# sarena:: targets with a CMake package config and a pkg-config file. See docs/install.md.
