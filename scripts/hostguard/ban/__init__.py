"""The ban at nginx: nginx's ban list, kept by the fail2ban action hostguard-nginx-ban.py."""
