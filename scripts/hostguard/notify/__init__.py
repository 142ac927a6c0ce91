"""The notifier: the spool, delivery, the chat formats and their answers, the webhook and heartbeat
files, the ban messages and the `hostguard-notify` command line."""
