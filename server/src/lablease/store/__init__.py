"""Storage: SQLAlchemy tables, Alembic migrations, transactions, atomic booking."""
