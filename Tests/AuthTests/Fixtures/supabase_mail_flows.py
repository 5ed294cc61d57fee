"""supabase-py's mailed flows against Splash's auth, which mails through a real SMTP server
(aiosmtpd) whose messages this script reads from its folder as a person reads an inbox: the code
alone on its line in the plain-text part, the link beside it. Both of the client's flow types:
implicit (codes and links whose redirect carries the session) and PKCE (links that carry a code,
exchanged with the verifier the client kept).

Usage: python3 supabase_mail_flows.py <base url> <api key> <mail folder>
Prints one line per step and "all steps passed" at the end; any failure raises and exits non-zero.
"""
import glob
import json
import os
import re
import sys
import time
import urllib.parse
import uuid

import httpx
from supabase import ClientOptions, create_client
from supabase_auth.errors import AuthApiError

url, key, folder = sys.argv[1], sys.argv[2], sys.argv[3]


def client(flow_type):
    return create_client(url, key, ClientOptions(flow_type=flow_type, httpx_client=httpx.Client(timeout=30)))


def address(name):
    return f"{name}-{uuid.uuid4().hex[:10]}@example.com"


def newest_mail(to, seen=0):
    """The newest mail to `to`, once more than `seen` have come: (subject, code, link)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        mails = []
        for name in sorted(glob.glob(os.path.join(folder, "*.json"))):
            with open(name) as f:
                record = json.load(f)
            if to in record["to"]:
                mails.append(record)
        if len(mails) > seen:
            text = mails[-1]["parts"]["text/plain"]
            lines = [line.strip() for line in text.splitlines()]
            code = next(line for line in lines if re.fullmatch(r"\d{6}", line))
            link = next(line for line in lines if line.startswith("http"))
            return mails[-1]["subject"], code, link
        time.sleep(0.1)
    raise AssertionError(f"no mail to {to}")


def follow(link):
    """Opens a mailed link as a browser would, without following the redirect: its target."""
    local = link.replace("http://localhost:8080", url)
    answer = httpx.get(local, follow_redirects=False, timeout=30)
    assert answer.status_code == 303, (answer.status_code, answer.text)
    return answer.headers["location"]


implicit = client("implicit")
person = address("py-recover")
implicit.auth.sign_up({"email": person, "password": "correct horse battery"})
implicit.auth.sign_out()
implicit.auth.reset_password_for_email(person, {"redirect_to": "splashedit://reset"})
subject, code, link = newest_mail(person)
assert subject == "Reset your Splash password", subject
assert code not in link
recovered = implicit.auth.verify_otp({"email": person, "token": code, "type": "recovery"})
assert recovered.session is not None and recovered.user.email == person
implicit.auth.update_user({"password": "another horse battery"})
implicit.auth.sign_out()
assert implicit.auth.sign_in_with_password({"email": person, "password": "another horse battery"}).session
print("recover with the mailed code, then a new password: ok")

try:
    implicit.auth.verify_otp({"email": person, "token": code, "type": "recovery"})
    raise AssertionError("a spent code worked twice")
except AuthApiError as error:
    assert error.code == "otp_expired", error.code
print("a spent code is refused: ok")

newcomer = address("py-otp")
implicit.auth.sign_in_with_otp({"email": newcomer, "options": {"data": {"username": f"py_{uuid.uuid4().hex[:8]}"}}})
subject, code, _ = newest_mail(newcomer)
assert subject == "Confirm your Splash account", subject
signed = implicit.auth.verify_otp({"email": newcomer, "token": code, "type": "email"})
assert signed.user.email == newcomer and signed.user.email_confirmed_at is not None
print("sign up and in with a code: ok")

try:
    implicit.auth.sign_in_with_otp({"email": address("py-nobody"), "options": {"should_create_user": False}})
    raise AssertionError("otp created an account it was told not to")
except AuthApiError as error:
    assert error.code == "otp_disabled", error.code
print("no account made when should_create_user is false: ok")

implicit.auth.sign_in_with_otp({"email": newcomer, "options": {"email_redirect_to": "splashedit://in"}})
subject, _, link = newest_mail(newcomer, seen=1)
assert subject == "Your Splash sign-in code", subject
target = follow(link)
assert target.startswith("splashedit://in#"), target
fragment = dict(urllib.parse.parse_qsl(target.split("#", 1)[1]))
assert fragment["token_type"] == "bearer" and fragment["type"] == "magiclink"
session = implicit.auth.set_session(fragment["access_token"], fragment["refresh_token"])
assert session.user.email == newcomer
print("a magic link's implicit redirect signs in: ok")

# A new address waits for both addresses' codes (the secure change, GoTrue's default).
moved = address("py-moved")
changed = implicit.auth.update_user({"email": moved})
assert changed.user.email == newcomer and changed.user.new_email == moved, changed.user
_, new_code, _ = newest_mail(moved)
_, current_code, _ = newest_mail(newcomer, seen=2)
first = httpx.post(f"{url}/auth/v1/verify", headers={"apikey": key},
                   json={"type": "email_change", "email": moved, "token": new_code}, timeout=30)
assert first.status_code == 200 and first.json()["msg"].startswith("Confirmation link accepted"), first.text
applied = implicit.auth.verify_otp({"email": newcomer, "token": current_code, "type": "email_change"})
assert applied.user.email == moved and applied.user.new_email is None, applied.user
print("email change, confirmed from both addresses: ok")

pkce = client("pkce")
reader = address("py-pkce")
pkce.auth.sign_up({"email": reader, "password": "correct horse battery"})
pkce.auth.sign_out()
pkce.auth.reset_password_for_email(reader, {"redirect_to": "splashedit://reset"})
_, _, link = newest_mail(reader)
target = follow(link)
assert target.startswith("splashedit://reset?code="), target
auth_code = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)["code"][0]
exchanged = pkce.auth.exchange_code_for_session({"auth_code": auth_code})
assert exchanged.session is not None and exchanged.user.email == reader
try:
    pkce.auth.exchange_code_for_session({"auth_code": auth_code, "code_verifier": "x" * 43})
    raise AssertionError("an auth code was exchanged twice")
except AuthApiError as error:
    assert error.code == "flow_state_not_found", error.code
print("PKCE recovery link, exchanged once: ok")

stranger = address("py-pkce-otp")
pkce.auth.sign_in_with_otp({"email": stranger})
_, code, link = newest_mail(stranger)
auth_code = urllib.parse.parse_qs(urllib.parse.urlsplit(follow(link)).query)["code"][0]
exchanged = pkce.auth.exchange_code_for_session({"auth_code": auth_code})
assert exchanged.user.email == stranger and exchanged.user.email_confirmed_at is not None
print("PKCE sign-up link: ok")

settings = httpx.get(f"{url}/auth/v1/settings", headers={"apikey": key}).json()
assert settings["external"]["email"] is True
print("all steps passed")
