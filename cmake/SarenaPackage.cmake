# Installation of the executables and system files (component "sarena") and the Debian packages
# built by CPack: libsarena-dev (component dev) and sarena (component sarena).
