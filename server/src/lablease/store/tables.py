"""The tables of lablease (SQLAlchemy 2 declarative).

Alembic migrations in store/migrations build the same schema; a test checks
that they agree.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    JSON,
    UniqueConstraint,
    func,
    text,
    type_coerce,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .base import NAMING, Base  # noqa: F401 (re-exported: migrations/env.py, the schema test)
from .secrets import SecretJson, SecretText
from .types import Json, UTCDateTime

class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    email: Mapped[str | None] = mapped_column(String(254))
    webhook_url: Mapped[str | None] = mapped_column(String(2000))
    webhook_secret: Mapped[str | None] = mapped_column(SecretText)  # sealed (store/secrets.py)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Set for a person who came from the site's directory: they sign in with its password (services/auth/directory.py)
    directory_dn: Mapped[str | None] = mapped_column(String(1000))
    display_name: Mapped[str | None] = mapped_column(String(200))


class Group(Base):
    __tablename__ = "groups"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    webhook_url: Mapped[str | None] = mapped_column(String(2000))
    webhook_secret: Mapped[str | None] = mapped_column(SecretText)  # sealed (store/secrets.py)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Set for the directory's groups: their members follow the directory, never a hand edit (services/auth/directory.py)
    directory_dn: Mapped[str | None] = mapped_column(String(1000))


class GroupMember(Base):
    __tablename__ = "group_members"
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True)
    # indexed alone too: authentication reads a user's groups by user (services/people/users.py)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True)
    is_owner: Mapped[bool] = mapped_column(Boolean, default=False)


class Token(Base):
    """An API token: only its SHA-256 is kept; the secret is shown once."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class WebLogin(Base):
    """A user's web sign-in secrets (services/auth/signin.py): a row once a password or a calendar address is set."""

    __tablename__ = "web_logins"
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    password_hash: Mapped[str | None] = mapped_column(String(255))  # argon2id
    calendar_token: Mapped[str | None] = mapped_column(SecretText)  # the secret in their iCalendar feed's URL


class Resource(Base):
    """Anything the calendar books: a system, or a resource of a schedule subject."""

    __tablename__ = "resources"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(400))
    capacity: Mapped[int] = mapped_column(Integer, default=1)
    __table_args__ = (
        UniqueConstraint("kind", "name", name="uq_resources_kind_name"),
        CheckConstraint("capacity >= 1", name="capacity_positive"),
    )


class Booking(Base):
    """One claim [start_at, end_at) on a resource; end_at NULL is open-ended.

    Exclusive bookings (capacity-1 resources) never overlap: checked under a
    lock by store/calendar.py, and on PostgreSQL also by an exclusion
    constraint (added in the migration).
    """

    __tablename__ = "bookings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    resource_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"))
    start_at: Mapped[datetime] = mapped_column(UTCDateTime)
    end_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    quantity: Mapped[int] = mapped_column(Integer, default=1)
    exclusive: Mapped[bool] = mapped_column(Boolean, default=True)
    kind: Mapped[str] = mapped_column(String(16))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    __table_args__ = (
        Index("ix_bookings_resource_start_end", "resource_id", "start_at", "end_at"),
        CheckConstraint("end_at IS NULL OR end_at > start_at", name="end_after_start"),
        CheckConstraint("quantity >= 1", name="quantity_positive"),
    )


class Arch(Base):
    """An architecture the site knows (as Beaker's arch table): systems and distro trees name one of these.

    A new database starts with domain.systems.ARCHES (migration 0028); an administrator adds more
    (lablease-server arch add, POST /api/v1/arches)."""

    __tablename__ = "arches"
    name: Mapped[str] = mapped_column(String(16), primary_key=True)
    created_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # NULL: one the database started with


class System(Base):
    __tablename__ = "systems"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    resource_id: Mapped[int] = mapped_column(ForeignKey("resources.id"), unique=True)
    fqdn: Mapped[str] = mapped_column(String(255), unique=True)
    arch: Mapped[str] = mapped_column(ForeignKey("arches.name"))
    cpus: Mapped[int | None] = mapped_column(Integer)
    memory_mb: Mapped[int | None] = mapped_column(Integer)
    lab: Mapped[str | None] = mapped_column(String(64))
    attributes: Mapped[dict] = mapped_column(Json, default=dict)
    condition: Mapped[str] = mapped_column(String(16), index=True)  # the scheduler's: only Automated ones (0032)
    usage: Mapped[str] = mapped_column(String(16), default="idle")
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    power: Mapped[dict] = mapped_column(SecretJson, default=dict)  # credentials sealed (store/secrets.py)
    netboot: Mapped[dict] = mapped_column(SecretJson, default=dict)
    power_state: Mapped[str] = mapped_column(String(8), default="unknown")  # last known, from completed commands
    # What happens when a reservation of the system ends: power_off, leave_on or reprovision.
    release_action: Mapped[str] = mapped_column(String(16), default="power_off")
    reprovision_distro_tree_id: Mapped[int | None] = mapped_column(
        ForeignKey("distro_trees.id", ondelete="SET NULL"))
    # When set, the system is governed by this pool's access policy instead of its own rules.
    policy_pool_id: Mapped[int | None] = mapped_column(ForeignKey("pools.id", ondelete="SET NULL"))
    # A guest recipe's virtual machine (services/provisioning/guests.py): its host's harness starts it; never scheduled,
    # reserved or lent on its own.
    guest: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # The inventory, as Beaker keeps it (services/catalog/inventory.py; docs/jobs.md, "hostRequires").
    vendor: Mapped[str | None] = mapped_column(String(255))
    model: Mapped[str | None] = mapped_column(String(255))
    serial: Mapped[str | None] = mapped_column(String(255))
    location: Mapped[str | None] = mapped_column(String(255))
    lender: Mapped[str | None] = mapped_column(String(255))
    system_type: Mapped[str] = mapped_column(String(16), default="Machine", server_default="Machine")
    hypervisor: Mapped[str | None] = mapped_column(String(32))  # NULL: bare metal
    numa_nodes: Mapped[int | None] = mapped_column(Integer)
    last_inventoried: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cpu: Mapped[dict | None] = mapped_column(Json)
    # Lists that may be long: loaded only when asked for (a filter on disks or devices, a system's page).
    disks: Mapped[list | None] = mapped_column(Json, deferred=True, deferred_group="hardware")
    devices: Mapped[list | None] = mapped_column(Json, deferred=True, deferred_group="hardware")
    # Loaded when used: a reserve needs the rules and the resource, a listing also owner and pools.
    owner: Mapped[User | None] = relationship(lazy="select")
    resource: Mapped[Resource] = relationship(lazy="joined")
    rules: Mapped[list[AccessRule]] = relationship(lazy="selectin", cascade="all, delete-orphan")
    pools: Mapped[list[Pool]] = relationship(secondary="pool_systems", lazy="select", back_populates="systems",
                                             order_by="Pool.name")
    policy_pool: Mapped[Pool | None] = relationship(lazy="select", foreign_keys=[policy_pool_id])


def netboot_mac_key(netboot):
    """A system's netboot MAC as the database compares it: its twelve digits in lower case, whatever the
    spelling (NULL without one). Two systems never share one: provisioning one would write the other's boot
    file (migration 0025; the application keeps the one spelling, provision/netboot.normalise_mac)."""
    mac = func.nullif(type_coerce(netboot, JSON)["mac"].as_string(), "")
    return func.lower(func.replace(func.replace(func.replace(mac, ":", ""), "-", ""), ".", ""))


Index("uq_systems_netboot_mac", netboot_mac_key(System.__table__.c.netboot), unique=True)


class AccessRule(Base):
    __tablename__ = "access_rules"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"), index=True)
    permission: Mapped[str] = mapped_column(String(32))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    group_id: Mapped[int | None] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"))


class Pool(Base):
    """A named set of systems owned by a group, whose members add and remove systems."""

    __tablename__ = "pools"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    owner_group_id: Mapped[int | None] = mapped_column(ForeignKey("groups.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # idle Automated systems kept for the scheduler: manual holds that would leave fewer are refused
    automation_floor: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    owner_group: Mapped[Group | None] = relationship(lazy="joined")
    systems: Mapped[list[System]] = relationship(secondary="pool_systems", lazy="selectin", back_populates="pools",
                                                 order_by="System.fqdn")
    rules: Mapped[list[PoolAccessRule]] = relationship(lazy="selectin", cascade="all, delete-orphan")


class PoolSystem(Base):
    __tablename__ = "pool_systems"
    pool_id: Mapped[int] = mapped_column(ForeignKey("pools.id", ondelete="CASCADE"), primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"), primary_key=True, index=True)


class PoolAccessRule(Base):
    """A rule of a pool's access policy, used by the systems that opt into it."""

    __tablename__ = "pool_access_rules"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pool_id: Mapped[int] = mapped_column(ForeignKey("pools.id", ondelete="CASCADE"), index=True)
    permission: Mapped[str] = mapped_column(String(32))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    group_id: Mapped[int | None] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"))


class Loan(Base):
    """A system lent to one user; at most one active loan per system."""

    __tablename__ = "loans"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"))
    recipient_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    lender_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    start_at: Mapped[datetime] = mapped_column(UTCDateTime)
    end_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    returned_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    return_reason: Mapped[str | None] = mapped_column(String(32))
    comment: Mapped[str | None] = mapped_column(Text)
    purpose: Mapped[str | None] = mapped_column(Text)
    warn_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    recipient: Mapped[User] = relationship(lazy="joined", foreign_keys=[recipient_id])
    lender: Mapped[User | None] = relationship(lazy="joined", foreign_keys=[lender_id])
    __table_args__ = (
        Index("ix_loans_system", "system_id"),
        Index("ix_loans_end_open", "end_at", sqlite_where=text("returned_at IS NULL"),
              postgresql_where=text("returned_at IS NULL")),
        Index("uq_loans_one_active", "system_id", unique=True, sqlite_where=text("returned_at IS NULL"),
              postgresql_where=text("returned_at IS NULL")),
    )


class Outbox(Base):
    """Messages to send (mail, webhook): written in the transaction that caused them, sent by the worker."""

    __tablename__ = "outbox"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    channel: Mapped[str] = mapped_column(String(16))
    destination: Mapped[str] = mapped_column(String(2000))
    subject: Mapped[str] = mapped_column(String(400))
    payload: Mapped[dict] = mapped_column(Json, default=dict)
    # One message per event and destination, however often the event is noticed.
    dedupe_key: Mapped[str] = mapped_column(String(400), unique=True)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Reservation(Base):
    __tablename__ = "reservations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # NULL while it waits for a system (store/waitline_tables.py ReservationWait)
    system_id: Mapped[int | None] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    booking_id: Mapped[int | None] = mapped_column(ForeignKey("bookings.id", ondelete="SET NULL"))
    kind: Mapped[str] = mapped_column(String(16), default="manual")
    start_at: Mapped[datetime] = mapped_column(UTCDateTime)
    end_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    returned_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    return_reason: Mapped[str | None] = mapped_column(String(16))
    return_loan: Mapped[bool] = mapped_column(Boolean, default=False)
    heartbeat_seconds: Mapped[int | None] = mapped_column(Integer)
    last_heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When the worker must act: min(end, last heartbeat + interval); NULL once returned.
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    warn_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    # Made inside an advance reservation: booked on the AR's calendar for the system, not the system's.
    ar_id: Mapped[int | None] = mapped_column(ForeignKey("advance_reservations.id", ondelete="SET NULL"))
    request_id: Mapped[str | None] = mapped_column(String(128))
    purpose: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    system: Mapped[System | None] = relationship(lazy="joined")
    user: Mapped[User] = relationship(lazy="joined")
    # a reservation that came through the waiting line (store/waitline_tables.py); None for the others
    wait: Mapped["ReservationWait | None"] = relationship(  # noqa: F821
        lazy="joined", uselist=False, back_populates="reservation")
    __table_args__ = (UniqueConstraint("user_id", "request_id", name="uq_reservations_user_request"),
                      # the open ones, counted at every /metrics scrape whatever the history holds
                      Index("ix_reservations_open", "start_at", sqlite_where=text("returned_at IS NULL"),
                            postgresql_where=text("returned_at IS NULL")))


class ScheduleSubject(Base):
    __tablename__ = "schedule_subjects"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    default_duration_seconds: Mapped[int] = mapped_column(Integer, default=86400)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ScheduleReservation(Base):
    """A booking of a generic schedule subject's resource (an IP, a VLAN, licence seats)."""

    __tablename__ = "schedule_reservations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    subject_id: Mapped[int] = mapped_column(ForeignKey("schedule_subjects.id", ondelete="CASCADE"), index=True)
    resource_name: Mapped[str] = mapped_column(String(255))
    resource_spec: Mapped[dict] = mapped_column(Json, default=dict)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    slice: Mapped[str | None] = mapped_column(String(255))
    start_at: Mapped[datetime] = mapped_column(UTCDateTime)
    end_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    quantity: Mapped[int] = mapped_column(Integer, default=1)
    booking_id: Mapped[int | None] = mapped_column(ForeignKey("bookings.id", ondelete="SET NULL"))
    cancelled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    user: Mapped[User] = relationship(lazy="joined")


class Activity(Base):
    """Who changed what, when: field old -> new."""

    __tablename__ = "activity"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    user_name: Mapped[str] = mapped_column(String(64))
    object_type: Mapped[str] = mapped_column(String(32))
    object_id: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(32))
    field: Mapped[str | None] = mapped_column(String(64))
    old: Mapped[str | None] = mapped_column(Text)
    new: Mapped[str | None] = mapped_column(Text)
    __table_args__ = (Index("ix_activity_object", "object_type", "object_id", "id"),)


class DistroTree(Base):
    """An installable tree; jobs' distroRequires match against these."""

    __tablename__ = "distro_trees"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    family: Mapped[str | None] = mapped_column(String(64))
    arch: Mapped[str] = mapped_column(ForeignKey("arches.name"))
    variant: Mapped[str | None] = mapped_column(String(64))
    tags: Mapped[list] = mapped_column(Json, default=list)
    url: Mapped[str] = mapped_column(String(2000))
    kernel: Mapped[str] = mapped_column(String(400))
    initrd: Mapped[str] = mapped_column(String(400))
    ks_meta: Mapped[str | None] = mapped_column(Text)
    kernel_options: Mapped[str | None] = mapped_column(Text)
    labs: Mapped[list] = mapped_column(Json, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    __table_args__ = (UniqueConstraint("name", "arch", "variant", name="uq_distro_trees_name_arch_variant"),)


class Job(Base):
    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    group_id: Mapped[int | None] = mapped_column(ForeignKey("groups.id", ondelete="SET NULL"))
    whiteboard: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(16), default="new")
    result: Mapped[str] = mapped_column(String(8), default="none")
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # A client-chosen id: submitting again with it while the job is unfinished returns this job.
    request_id: Mapped[str | None] = mapped_column(String(128))
    # The normalised job as submitted with a request_id: a retry must send the same job.
    # Both documents are loaded only when read (deferred): a job is joined into every recipe and recipe set
    # loaded (Recipe.recipe_set, RecipeSet.job), and a 100-recipe job's document is ~60 kB of JSON that each
    # of those rows would otherwise decode again (docs/performance.md, "Beaker's hub").
    request_document: Mapped[dict | None] = mapped_column(Json, deferred=True)
    # The normalised job as submitted (the export writes it back) and the parts kept but not acted on.
    document: Mapped[dict | None] = mapped_column(Json, deferred=True)
    warnings: Mapped[list | None] = mapped_column(Json)
    owner: Mapped[User] = relationship(lazy="joined")
    recipe_sets: Mapped[list[RecipeSet]] = relationship(lazy="selectin", order_by="RecipeSet.id",
                                                        back_populates="job")
    __table_args__ = (Index("uq_jobs_unfinished_request", "owner_id", "request_id", unique=True,
                            sqlite_where=text("finished_at IS NULL AND request_id IS NOT NULL"),
                            postgresql_where=text("finished_at IS NULL AND request_id IS NOT NULL")),)


class RecipeSet(Base):
    """Recipes placed together, all or nothing."""

    __tablename__ = "recipe_sets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    priority: Mapped[int] = mapped_column(Integer, default=2)
    ar_id: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="new")
    result: Mapped[str] = mapped_column(String(8), default="none")
    queued_at: Mapped[datetime] = mapped_column(UTCDateTime)
    multi: Mapped[bool] = mapped_column(Boolean, default=False)  # more than one recipe
    job: Mapped[Job] = relationship(lazy="joined", back_populates="recipe_sets")
    # The set's own recipes; guest recipes are their hosts' `guests` (each host with its guests: every_recipe).
    recipes: Mapped[list[Recipe]] = relationship(
        lazy="selectin", order_by="Recipe.id", viewonly=True,
        primaryjoin="and_(RecipeSet.id == Recipe.recipe_set_id, Recipe.host_recipe_id.is_(None))")

    def every_recipe(self) -> list[Recipe]:
        return [r for host in self.recipes for r in (host, *host.guests)]
    __table_args__ = (Index("ix_recipe_sets_queue", "multi", "status", "priority", "queued_at"),)


# The queue's multi-host sets in scheduling order (services/queue/scheduling.py head): walked by the index without
# sorting, however long the queue.
Index("ix_recipe_sets_head", RecipeSet.multi, RecipeSet.status, RecipeSet.priority.desc(), RecipeSet.queued_at,
      RecipeSet.id)


class Recipe(Base):
    __tablename__ = "recipes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    recipe_set_id: Mapped[int] = mapped_column(ForeignKey("recipe_sets.id", ondelete="CASCADE"), index=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    spec: Mapped[dict] = mapped_column(Json, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="new")
    result: Mapped[str] = mapped_column(String(8), default="none")
    # Copied from the recipe set and its requirements, so that the queue of each
    # requirement class is read in scheduling order straight from an index.
    class_id: Mapped[int | None] = mapped_column(ForeignKey("requirement_classes.id", ondelete="SET NULL"))
    priority: Mapped[int] = mapped_column(Integer, default=2)
    queued_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    system_id: Mapped[int | None] = mapped_column(ForeignKey("systems.id", ondelete="SET NULL"), index=True)
    reservation_id: Mapped[int | None] = mapped_column(ForeignKey("reservations.id", ondelete="SET NULL"))
    distro_tree_id: Mapped[int | None] = mapped_column(ForeignKey("distro_trees.id", ondelete="SET NULL"))
    task_results: Mapped[list] = mapped_column(Json, default=list)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    watchdog_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    # A guest recipe's host recipe (in the same recipe set); None for a recipe of the set itself.
    host_recipe_id: Mapped[int | None] = mapped_column(ForeignKey("recipes.id", ondelete="CASCADE"))
    recipe_set: Mapped[RecipeSet] = relationship(lazy="joined")
    # Loaded when used (placing, finishing, answers): the scheduler's hot paths read recipes without them.
    guests: Mapped[list[Recipe]] = relationship(lazy="select", order_by="Recipe.id", viewonly=True,
                                                primaryjoin="Recipe.id == foreign(Recipe.host_recipe_id)")
    system: Mapped[System | None] = relationship(lazy="joined")
    __table_args__ = (Index("ix_recipes_status", "status"),)


# The recipe holding a system by a reservation (store/migrations 0024: the database checks it on every return;
# services/booking/endings.py asks it): only recipes in a holding state, so it stays as small as the lab.
Index("ix_recipes_holding", Recipe.reservation_id,
      sqlite_where=text("status IN ('assigned', 'scheduled', 'waiting', 'installing', 'running')"),
      postgresql_where=text("status IN ('assigned', 'scheduled', 'waiting', 'installing', 'running')"))

# A host's guests (only guests are in it: `host_recipe_id IS NULL`, every host recipe, must not look selective
# to a planner without statistics), and the sets holding systems while they wait (scheduling.holders: a few
# rows, where the status index looks like half the table per value to a planner with statistics). Both
# store/migrations 0032.
Index("ix_recipes_host_recipe_id", Recipe.host_recipe_id, sqlite_where=text("host_recipe_id IS NOT NULL"),
      postgresql_where=text("host_recipe_id IS NOT NULL"))
Index("ix_recipes_assigned", Recipe.recipe_set_id, sqlite_where=text("status = 'assigned'"),
      postgresql_where=text("status = 'assigned'"))

# Each requirement class's queued recipes in scheduling order (services/queue/scheduling.py _class_queue): a page is
# read from the index without sorting the class's top-priority group, however long the queue.
Index("ix_recipes_class_queue", Recipe.class_id, Recipe.status, Recipe.priority.desc(), Recipe.queued_at, Recipe.id)


class RequirementClass(Base):
    """Recipes that ask for the same systems (requirements, owner, autopick pools) share one class.

    Its candidate systems are stored once, however many recipes wait in it.
    """

    __tablename__ = "requirement_classes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    spec: Mapped[dict] = mapped_column(Json, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ClassCandidate(Base):
    """The systems a requirement class could run on: a freed system finds its waiting work by this index."""

    __tablename__ = "class_candidates"
    class_id: Mapped[int] = mapped_column(ForeignKey("requirement_classes.id", ondelete="CASCADE"), primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"), primary_key=True,
                                           index=True)
    rank: Mapped[int] = mapped_column(Integer, default=0)  # autopick preference: lower first


class UsageChange(Base):
    """System usage and condition history, for utilisation reports."""

    __tablename__ = "usage_history"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    field: Mapped[str] = mapped_column(String(16))
    old: Mapped[str | None] = mapped_column(String(16))
    new: Mapped[str] = mapped_column(String(16))
    __table_args__ = (Index("ix_usage_history_system_at", "system_id", "at"),)
