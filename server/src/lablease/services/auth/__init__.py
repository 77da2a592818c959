"""Signing in: passwords and web sessions, trusted REMOTE_USER, the site's LDAP directory, Kerberos."""
