"""hostguard's host agent: monitors, notifier, heartbeat (Python standard library only).

One module per concern; the programs in /usr/local/lib/hostguard/ are thin
entry points that call one `main()` here. Supported: Python 3.9 to 3.13
(Debian 11/12/13, Ubuntu 22.04/24.04). See scripts/README.md.
"""
