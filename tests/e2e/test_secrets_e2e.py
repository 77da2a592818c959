"""The site's secrets on disk, through the real `lablease-server`: private files, sealed rows, init seals old ones."""
import stat

from sqlalchemy import create_engine, text

from tests.support.live import LiveServer


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_init_and_serve_create_the_data_directory_database_and_key_for_the_servers_user_only(tmp_path):
    data = tmp_path / "site" / "data"  # nothing of it exists yet
    server = LiveServer(data)  # the default database: SQLite in the data directory
    server.admin_cli("init")
    assert _mode(data) == 0o700
    assert _mode(data / "secret.key") == 0o600
    assert _mode(data / "lablease.db") == 0o600
    server.start()  # serving: SQLite's write-ahead log appears beside the database, as private
    try:
        server.admin.post("/systems", json={"fqdn": "s1.lab.test", "arch": "x86_64", "condition": "manual"})
        for name in ("lablease.db-wal", "lablease.db-shm"):
            assert _mode(data / name) == 0o600, name
    finally:
        server.stop()


def test_init_seals_secrets_an_earlier_version_stored_in_plain_text(tmp_path, database_url):
    server = LiveServer(tmp_path / "data", database_url)
    server.admin_cli("init")
    server.admin_cli("user", "add", "alice")
    engine = create_engine(database_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE users SET webhook_secret = 'plain-s3cret' WHERE name = 'alice'"))
        output = server.admin_cli("init")
        assert "stored secrets sealed under the site key: 1 row(s)" in output
        with engine.connect() as connection:
            [stored] = connection.execute(text("SELECT webhook_secret FROM users WHERE name = 'alice'")).scalars()
        assert stored.startswith("fernet:") and "plain-s3cret" not in stored
        assert "sealed" not in server.admin_cli("init")  # nothing left in plain text
    finally:
        engine.dispose()
