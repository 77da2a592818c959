"""Joining the waiting line (`POST /reservations` with `wait`): what the request asks for, checked now,
and the waiting reservation queued in the scheduler's requirement class (services/queue/scheduling.py), then
offered at once what is free (services/queue/waitline.py `try_grant`). docs/scheduler.md, "People in the queue".

Apart from services/queue/waitline.py because it needs the scheduler's classes, while the scheduler needs
the line: this module depends on both, neither depends on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, exists, func, or_, select

from ...domain import reservations as reservation_rules
from ...domain import retries
from ...domain import waitline as rules
from ...domain.errors import Invalid
from ...domain.permissions import Actor, Permission
from ...jobxml.normalise import normalise_host_filter
from ...scheduler.filters import LIVE_FIELDS, is_live
from ...store.tables import ClassCandidate, Loan, Pool, RequirementClass, Reservation, System, User
from ...store.waitline_tables import ReservationWait
from ..booking import holds
from ..catalog import systems as system_service
from ..provisioning import guests
from ..records import activity
from .scheduling import requirement_class
from .waitline import WAITING, try_grant


@dataclass(frozen=True)
class WaitRequest:
    """A reservation that waits in the line (POST /reservations with `wait`), parsed: what `enqueue` takes."""

    system: str | None = None  # one named system, or
    requires: dict | None = None  # a host filter (normalised: jobxml/normalise.py) and/or
    pools: tuple[str, ...] = ()  # pools, any system of which will do
    duration: timedelta | str | None = None  # "unlimited" where the policy allows no end
    heartbeat: timedelta | None = None
    take_by: timedelta | None = None
    healthy_within: timedelta | None = None  # only a system with a passing health check that recent
    priority: int = 0
    return_loan: bool = False
    request_id: str | None = None
    purpose: str | None = None
    force: bool = False  # an admin's wait may take a pool below its automation floor (holds.floor_allows)


def parse_request(body: dict, duration, heartbeat: timedelta | None, take_by: timedelta | None,
                  healthy_within: timedelta | None = None, force: bool = False) -> WaitRequest:
    """The body's fields (its durations parsed by the caller), checked as far as they can be without reading."""
    requires = normalise_host_filter(body.get("requires"), "requires")
    if is_live(requires):  # the candidates are chosen once; who holds a system changes all the time
        raise Invalid("requires", f"{' and '.join(sorted(LIVE_FIELDS))} cannot choose what a reservation waits for")
    return WaitRequest(body.get("system"), requires, tuple(body.get("pools") or ()), duration, heartbeat, take_by,
                       healthy_within, rules.priority(body.get("priority")), bool(body.get("return_loan", False)),
                       body.get("request_id"), body.get("purpose"), bool(force))


def enqueue(uow, actor: Actor, now: datetime, policy: reservation_rules.ReservationPolicy,
            request: WaitRequest) -> tuple[Reservation, bool]:
    """Queue a waiting reservation (granted at once when a system it may use is free); (reservation, created)."""
    session = uow.session
    request_id = request.request_id  # (read often below)
    asked = _asked(request)
    if request_id and (previous := _by_request_id(uow, actor, request_id)) is not None:
        return _retried(uow, previous, request_id, asked), False  # what its first attempt queued
    wanted = _wanted(uow, actor, request)
    purpose = holds.purpose_of(uow.settings, request.purpose)
    window = reservation_rules.plan_window(now, policy, duration=request.duration)  # the site's default and maximum
    length = window.end - window.start if window.end is not None else None
    take_by = rules.check_take_by(request.take_by, length)
    heartbeat = reservation_rules.heartbeat_interval(request.heartbeat) if request.heartbeat is not None else None
    uow.start_writing()  # SQLite: the write lock from here (as a reserve takes it), so queueing is serialised
    if request_id and (previous := _by_request_id(uow, actor, request_id)) is not None:
        return _retried(uow, previous, request_id, asked), False  # a retry that raced its first attempt
    cls = requirement_class(uow, actor.id, {"host_requires": wanted.tree, "force": wanted.force, "reserve": True},
                            now)
    _refuse_never_granted(uow, actor, cls.id)
    reservation = Reservation(system_id=None, user_id=actor.id, kind="manual", start_at=now, end_at=None,
                              return_loan=request.return_loan,
                              heartbeat_seconds=int(heartbeat.total_seconds()) if heartbeat else None,
                              request_id=request_id, created_at=now, purpose=purpose)
    session.add(reservation)
    session.flush()
    wait = ReservationWait(reservation_id=reservation.id, class_id=cls.id,
                           priority=request.priority, queued_at=now, duration_seconds=_seconds(length),
                           take_by_seconds=_seconds(take_by), status=WAITING, reservation=reservation,
                           healthy_within_seconds=_seconds(request.healthy_within),
                           force=request.force and actor.is_admin)
    session.add(wait)
    session.flush()
    reservation.user = session.get(User, actor.id)
    activity.record(uow, actor, now, "reservation", reservation.id, "waiting", "wants", None,
                    wanted.force or "a system matching requires/pools")
    try_grant(uow, wait, now)
    return reservation, True


def _refuse_never_granted(uow, actor: Actor, class_id: int) -> None:
    """The wait's candidates (systems its owner may reserve by policy) must include one it could be granted
    as things stand: a Manual one, or an Automated one its owner owns, borrows, or (an admin) may take —
    the same rule as reserving one of them by name. A loan to someone else ends one day: such systems count."""
    session = uow.session
    candidate = and_(ClassCandidate.class_id == class_id, ClassCandidate.system_id == System.id)
    grantable = System.condition == "manual"
    if not actor.is_admin:
        lent_to_owner = exists().where(Loan.system_id == System.id, Loan.recipient_id == actor.id,
                                       Loan.returned_at.is_(None))
        grantable = or_(grantable, and_(System.condition == "automated",
                                        or_(System.owner_id == actor.id, lent_to_owner)))
    else:
        grantable = System.condition.in_(("manual", "automated"))
    if session.execute(select(System.id).where(exists().where(candidate), grantable).limit(1)).first():
        return
    counts = session.execute(select(System.condition, func.count()).where(exists().where(candidate))
                             .group_by(System.condition)).all()
    raise rules.never_granted({condition: n for condition, n in counts if condition != "removed"})


def _asked(request: WaitRequest) -> retries.WaitAsked:
    """What this request asks, as a retry is compared (domain/retries.py `wait_differences`)."""
    wanted = rules.wanted(request.system, request.requires, list(request.pools))
    duration = request.duration
    length = None if duration in (None, reservation_rules.UNLIMITED) else duration
    return retries.WaitAsked(wanted.force, wanted.tree, length, request.heartbeat, request.take_by,
                             request.healthy_within, request.priority, request.return_loan,
                             length_given=duration is not None)


def _retried(uow, previous: Reservation, request_id: str, asked: retries.WaitAsked) -> Reservation:
    """The reservation the first attempt made, when this is the same request; else 409 naming what differs
    (the rule of every reserve with a request_id: docs/api.md)."""
    wait = previous.wait
    if wait is None:  # the first one did not wait
        retries.refuse_changed_retry(request_id, f"reservation {previous.id}", retries.wait_mode_differs(False))
        return previous
    spec = uow.session.get(RequirementClass, wait.class_id).spec
    made = retries.WaitAsked(spec.get("force"), spec.get("host_requires"), _delta(wait.duration_seconds),
                             _delta(previous.heartbeat_seconds), _delta(wait.take_by_seconds),
                             _delta(wait.healthy_within_seconds), wait.priority, bool(previous.return_loan))
    retries.refuse_changed_retry(request_id, f"reservation {previous.id}", retries.wait_differences(asked, made))
    return previous


def _delta(seconds: int | None) -> timedelta | None:
    return timedelta(seconds=seconds) if seconds is not None else None


def _by_request_id(uow, actor: Actor, request_id: str) -> Reservation | None:
    return uow.session.execute(select(Reservation).where(
        Reservation.user_id == actor.id, Reservation.request_id == request_id)).unique().scalar_one_or_none()


def _seconds(value: timedelta | None) -> int | None:
    return int(value.total_seconds()) if value is not None else None


def _wanted(uow, actor: Actor, request: WaitRequest) -> rules.Wanted:
    """What it waits for, checked now: a named system the caller may reserve, or a filter/pools that exist."""
    pools = list(request.pools)
    known = set(uow.session.execute(select(Pool.name)).scalars())
    for name in pools:
        if name not in known:
            raise Invalid("pools", f"no pool named {name}")
    wanted = rules.wanted(request.system, request.requires, pools)
    if wanted.force is not None:
        target = system_service.find(uow, wanted.force, actor)
        guests.refuse(target, "reserved")
        system_service.require(uow, actor, Permission.RESERVE, target)
        wanted = rules.Wanted(target.fqdn, None)
    return wanted
