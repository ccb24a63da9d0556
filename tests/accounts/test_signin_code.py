"""Sign-in by emailed code (docs/accounts.md, "Sign-in by emailed code"): the
code works once, for 10 minutes, only in the browser session that asked; three
wrong codes void it and wrong codes count against the address's sign-in limit
like wrong passwords; known and unknown addresses get the same answer; the
second factor is still asked; `SIGNIN_BY_CODE=false` turns it all off."""

from __future__ import annotations

import re
import threading
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import event, select

from tests.support.accounts import PASSWORD, body, login, mails, register, user_row
from tests.support.factors import code as totp_code
from tests.support.factors import next_step, set_up
from tests.support.web import csrf_token, post, without_csrf
from tests.support.workflows import only_run
from webapp import create_app
from webapp.accounts import erase_accounts, ratelimit, registration, signin_codes
from webapp.accounts.events import EMAIL_VERIFIED
from webapp.accounts.tables import user_sessions
from webapp.accounts.users import stream_of as users_stream
from webapp.core import db
from webapp.eventstore import read_stream
from webapp.mail.outbox.tables import mail_outbox

ADA = "ada@example.com"
ASK = "/login/email-code"
ENTER = "/login/email-code/enter"
CODE = re.compile(r"^([2-9A-Z]{8})$", re.MULTILINE)


def ask(client: FlaskClient, address: str = ADA, htmx: bool = False, **query: str) -> Any:
    path = ASK + (f"?next={query['next']}" if "next" in query else "")
    return post(client, path, htmx=htmx, email=address)


def enter(client: FlaskClient, code: str, htmx: bool = False, **extra: str) -> Any:
    token = csrf_token(client, "/login")
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(ENTER, data={"code": code, "csrf_token": token, **extra}, headers=headers)


def codes_to(app: Any, work: Any, address: str = ADA) -> list[str]:
    """The codes mailed to `address`, oldest first (the worker sends them)."""
    work()
    out = []
    for m in mails(app):
        if m["To"] == address and m["Subject"] == "Your sign-in code":
            found = CODE.search(body(m))
            assert found, body(m)
            out.append(found.group(1))
    return out


def signed_in(client: FlaskClient) -> bool:
    return client.get("/profile").status_code == 200


def sign_out(client: FlaskClient) -> None:
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})


def registered(client: FlaskClient, address: str = ADA) -> None:
    assert register(client, address).status_code == 200


def twins(app: Any, client: FlaskClient, n: int) -> list[FlaskClient]:
    """`n` clients holding `client`'s session cookie: one browser session."""
    cookie = client.get_cookie("session")
    assert cookie is not None
    out = []
    for _ in range(n):
        c = app.test_client()
        c.set_cookie("session", cookie.value)
        out.append(c)
    return out


def test_the_mailed_code_signs_in_once_and_follows_next(
    app: Any, client: FlaskClient, work: Any
) -> None:
    registered(client)
    page = client.get("/login").get_data(as_text=True)
    assert 'href="/login/email-code"' in page and "Email me a sign-in code" in page
    assert 'href="/login/email-code?next=/privacy"' in client.get("/login?next=/privacy").get_data(
        as_text=True
    )
    r = ask(client, "ADA@Example.com", next="/privacy")
    assert r.status_code == 200
    text = r.get_data(as_text=True)
    assert "If an account exists for ada@example.com, we have sent a sign-in code to it." in text
    assert 'autocomplete="one-time-code"' in text and f'action="{ENTER}"' in text
    assert 'href="/login/email-code?next=/privacy">Send a new code' in text  # `next` kept
    (code,) = codes_to(app, work)
    assert not signed_in(client)
    copy = twins(app, client, 1)[0]  # the same browser session, replayed later
    r = enter(client, code.lower()[:4] + "-" + code[4:].lower())  # typed loosely
    assert r.status_code == 302 and r.headers["Location"] == "/privacy"
    assert signed_in(client)
    r = enter(copy, code)  # spent: the row is gone
    assert r.status_code == 422
    assert "This sign-in code has expired, was already used" in r.get_data(as_text=True)
    assert not signed_in(copy)


def test_the_same_code_sent_four_times_at_once_signs_in_once(
    app: Any, client: FlaskClient, work: Any
) -> None:
    registered(client)
    ask(client)
    (code,) = codes_to(app, work)
    token = csrf_token(client, "/login")
    clients, results = twins(app, client, 4), []
    start = threading.Barrier(4)

    def go(c: FlaskClient) -> None:
        with app.app_context():
            start.wait()
            results.append(c.post(ENTER, data={"code": code, "csrf_token": token}).status_code)

    threads = [threading.Thread(target=go, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [302, 422, 422, 422]
    with db.reading() as conn:
        assert len(conn.execute(select(user_sessions.c.digest)).all()) == 1


def test_a_code_expires_after_10_minutes(
    app: Any, client: FlaskClient, work: Any, clock: Any
) -> None:
    registered(client)
    ask(client)
    (first,) = codes_to(app, work)
    clock.advance(600)  # the 10 minutes are over
    r = enter(client, first)
    assert r.status_code == 422
    assert "This sign-in code has expired" in r.get_data(as_text=True)
    ask(client)
    second = codes_to(app, work)[-1]
    clock.advance(599)  # still within them
    assert enter(client, second).status_code == 302 and signed_in(client)


def test_another_browser_cannot_use_the_code(app: Any, client: FlaskClient, work: Any) -> None:
    registered(client)
    ask(client)
    (code,) = codes_to(app, work)
    other = app.test_client()
    r = enter(other, code)  # asked for nothing: back to the start
    assert r.status_code == 302 and r.headers["Location"] == ASK
    ask(other)  # its own code for the same address: the first is not it
    assert len(codes_to(app, work)) == 2
    r = enter(other, code)
    assert r.status_code == 422 and "That sign-in code is not correct." in r.get_data(as_text=True)
    assert not signed_in(other)
    assert enter(client, code).status_code == 302 and signed_in(client)  # still good where asked


def test_three_wrong_codes_void_it_and_wrong_codes_count_like_wrong_passwords(
    app: Any, client: FlaskClient, work: Any
) -> None:
    registered(client)
    ask(client)
    (code,) = codes_to(app, work)
    wrong = "22222222" if code != "22222222" else "33333333"
    for _ in range(3):
        r = enter(client, wrong)
        assert r.status_code == 422
        assert "That sign-in code is not correct." in r.get_data(as_text=True)
    r = enter(client, code)  # the third wrong one voided it
    assert r.status_code == 422 and "has expired" in r.get_data(as_text=True)
    # 4 failures so far (3 wrong, 1 void); a wrong password is the fifth.
    assert login(client, ADA, password="not the password at all").status_code == 422
    ask_again = ask(client)
    assert ask_again.status_code == 429 and "Too many attempts" in ask_again.get_data(as_text=True)
    assert len(codes_to(app, work)) == 1  # no code mailed while limited
    assert login(client, ADA).status_code == 429  # the password too: one limit per address


def test_badly_formed_codes_are_refused_before_anything_is_compared(
    app: Any, client: FlaskClient, work: Any
) -> None:
    registered(client)
    ask(client)
    for value, message in (
        ("", "Enter the sign-in code."),
        ("ABC", "A sign-in code has 8 letters and digits."),
        ("00000000", "A sign-in code has 8 letters and digits."),  # 0 is no code's
        ("A" * 5000, "A sign-in code has 8 letters and digits."),
        ("<script>", "A sign-in code has 8 letters and digits."),
    ):
        r = enter(client, value)
        assert r.status_code == 422 and message in r.get_data(as_text=True)
    assert ratelimit.allowed("login-account", ADA)
    (code,) = codes_to(app, work)
    assert enter(client, code).status_code == 302  # none of them counted as a try
    missing = post(app.test_client(), ASK)
    assert missing.status_code == 422 and "Enter your email address" in missing.get_data(
        as_text=True
    )


def normalized_answer(resp: Any, address: str) -> str:
    """The answer with the address typed and the CSRF tokens (one per render) masked."""
    text = without_csrf(resp.get_data(as_text=True)).replace(address, "ADDRESS")
    return re.sub(r'name="csrf_token" value="[^"]+"', 'name="csrf_token" value="T"', text)


def test_known_and_unknown_addresses_get_the_same_answer(
    app: Any, client: FlaskClient, work: Any
) -> None:
    registered(client)
    for htmx in (False, True):
        known = ask(app.test_client(), ADA, htmx=htmx)
        unknown = ask(app.test_client(), "nobody@example.com", htmx=htmx)
        assert known.status_code == unknown.status_code == 200
        assert normalized_answer(known, ADA) == normalized_answer(unknown, "nobody@example.com")
        assert known.headers.get("Vary") == unknown.headers.get("Vary")
    stranger = app.test_client()
    ask(stranger, "nobody@example.com")
    assert codes_to(app, work, "nobody@example.com") == []  # nobody to mail
    with db.reading() as conn:  # its mail was recorded in a savepoint and rolled back
        kinds = conn.execute(select(mail_outbox.c.kind, mail_outbox.c.user_id)).all()
    assert all(user_id is not None for _, user_id in kinds)
    r = enter(stranger, "ABCDEFGH")  # the code form answers as for a real address
    assert r.status_code == 422 and "That sign-in code is not correct." in r.get_data(as_text=True)


def statements_and_jobs(app: Any, redis: Any, address: str) -> tuple[list[str], int]:
    """What asking for a code for `address` (in a fresh browser) sends to the
    database, savepoints left out, and how many jobs it enqueues."""
    client = app.test_client()
    token = csrf_token(client, ASK)
    sent: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if not re.match(r"\s*(SAVEPOINT|RELEASE|ROLLBACK TO)", statement):
            sent.append(" ".join(statement.split()))

    engine = db.get_engine()
    jobs_before = len(redis.keys("rq:job:*"))
    event.listen(engine, "before_cursor_execute", note)
    try:
        assert client.post(ASK, data={"email": address, "csrf_token": token}).status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", note)
    return sent, len(redis.keys("rq:job:*")) - jobs_before


def test_known_and_unknown_addresses_do_the_same_work(
    app: Any, client: FlaskClient, redis: Any
) -> None:
    """The answer's time cannot tell them apart because the work is the same:
    the same statements in the same order (the unknown address's mail is
    recorded in a savepoint that is rolled back) and one delivery job each.
    bench/signin_code.py measures the times."""
    registered(client)
    known = statements_and_jobs(app, redis, ADA)
    unknown = statements_and_jobs(app, redis, "nobody@example.com")
    assert known == unknown
    assert known[1] == 1 and any("INSERT INTO mail_outbox" in q for q in known[0])
    with db.reading() as conn:
        mailed = select(mail_outbox.c.recipient).where(mail_outbox.c.kind == "signin-code")
        assert conn.execute(mailed).scalars().all() == [ADA]


def test_a_restricted_account_gets_no_code_and_cannot_sign_in(
    app: Any, client: FlaskClient, redis: Any, work: Any
) -> None:
    registered(client)
    assert login(client, ADA).status_code == 302
    post(client, "/privacy/restrict", current_password=PASSWORD)
    restricted = statements_and_jobs(app, redis, ADA)
    unknown = statements_and_jobs(app, redis, "nobody@example.com")
    assert restricted == unknown  # the same work, and no mail
    assert codes_to(app, work) == []


def test_more_than_three_requests_in_15_minutes_mail_no_more_codes(
    app: Any, client: FlaskClient, work: Any
) -> None:
    registered(client)
    for _ in range(3):
        assert ask(client).status_code == 200
    codes = codes_to(app, work)
    assert len(codes) == 3
    r = ask(client)  # the same answer, no mail; this browser keeps its code
    assert r.status_code == 200 and "If an account exists for ada@example.com" in r.get_data(
        as_text=True
    )
    assert len(codes_to(app, work)) == 3
    assert enter(client, codes[-1]).status_code == 302


def test_the_second_factor_is_still_asked(
    app: Any, client: FlaskClient, work: Any, clock: Any
) -> None:
    registered(client)
    assert login(client, ADA).status_code == 302
    secret, _ = set_up(client)
    sign_out(client)
    ask(client, next="/privacy")
    (code,) = codes_to(app, work)
    r = enter(client, code)
    assert r.status_code == 302 and r.headers["Location"] == "/login/code"
    assert not signed_in(client)  # the code alone signs nobody in
    next_step(clock)
    r = client.post("/login/code", data={"code": totp_code(secret), "csrf_token": csrf_token(client, "/login/code")})  # fmt: skip
    assert r.status_code == 302 and r.headers["Location"] == "/privacy"
    assert signed_in(client)


def test_htmx_swaps_the_section_and_a_right_code_loads_the_next_page(
    app: Any, client: FlaskClient, work: Any
) -> None:
    registered(client)
    r = ask(client, htmx=True)
    text = r.get_data(as_text=True)
    assert r.status_code == 200 and text.lstrip().startswith('<section id="email-code"')
    assert 'id="live-status"' in text and "we have sent a sign-in code" in text
    (code,) = codes_to(app, work)
    r = enter(client, "22222223" if code != "22222223" else "22222224", htmx=True)
    assert r.status_code == 422 and 'aria-invalid="true"' in r.get_data(as_text=True)
    r = enter(client, code, htmx=True, remember="y")
    assert r.status_code == 200 and r.headers["HX-Redirect"] == "/profile"
    assert signed_in(client) and client.get_cookie("remember_token") is not None


def test_turned_off_the_link_goes_and_the_urls_answer_404(
    app: Any, make_config: Any, work: Any
) -> None:
    off = create_app(make_config(signin_by_code=False))
    client = off.test_client()
    assert register(client, ADA).status_code == 200
    page = client.get("/login").get_data(as_text=True)
    assert "/login/email-code" not in page and "Email me a sign-in code" not in page
    assert client.get(ASK).status_code == 404
    token = csrf_token(client, "/login")
    assert client.post(ASK, data={"email": ADA, "csrf_token": token}).status_code == 404
    assert client.post(ENTER, data={"code": "ABCDEFGH", "csrf_token": token}).status_code == 404
    assert codes_to(app, work) == []
    assert login(client, ADA, PASSWORD).status_code == 302  # the password still works


def test_erasure_deletes_the_accounts_codes(app: Any, client: FlaskClient, work: Any) -> None:
    registered(client)
    ask(client)
    with db.reading() as conn:
        (row,) = conn.execute(select(signin_codes.signin_codes)).all()
    assert row.user_id is not None and len(row.code_hash) == 64
    assert erase_accounts.erase(row.tenant_id, row.user_id)
    with db.reading() as conn:
        assert conn.execute(select(signin_codes.signin_codes)).all() == []


def verifications() -> int:
    row = user_row(ADA)
    with db.reading() as conn:
        stream = read_stream(conn, users_stream(row.tenant_id, row.id))
    return sum(1 for e in stream if e.type == EMAIL_VERIFIED)


def test_a_code_typed_back_verifies_the_address(app: Any, client: FlaskClient, work: Any) -> None:
    """The code reached the address, as the verification link would have: an
    unverified account is verified by it, and the verification run (which
    awaits that event) completes; a second sign-in by code adds nothing."""
    registered(client)
    work()
    assert not user_row(ADA).email_verified
    assert only_run("email-verification-registered").status == "suspended"
    ask(client)
    (code,) = codes_to(app, work)
    assert enter(client, code).status_code == 302
    assert user_row(ADA).email_verified
    work()
    assert only_run("email-verification-registered").status == "completed"
    assert verifications() == 1
    sign_out(client)
    ask(client)
    assert enter(client, codes_to(app, work)[-1]).status_code == 302
    assert verifications() == 1


def test_only_the_address_the_code_went_to_is_verified(app: Any, client: FlaskClient) -> None:
    """Had the address changed since the code went out, the code proves the
    old one only: the account's current address is left unverified."""
    registered(client)
    row = user_row(ADA)
    assert not registration.verified_by_code(row, "someone.else@example.com").ok
    assert not user_row(ADA).email_verified
    assert registration.verified_by_code(row, ADA).ok
    assert user_row(ADA).email_verified
