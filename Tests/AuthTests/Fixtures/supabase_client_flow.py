"""The official Python client (supabase-py) against Splash's auth, with only its URL changed.

Usage: python3 supabase_client_flow.py <base url> <api key>
Prints one line per step and "all steps passed" at the end; any failure raises and exits non-zero.
"""
import sys
import uuid

import httpx
from supabase import ClientOptions, create_client
from supabase_auth.errors import AuthApiError

url, key = sys.argv[1], sys.argv[2]
# httpx's 5 s read timeout is the client's default, not a promise of the protocol: make test runs
# every suite at once on two cores, where one answer in many can take longer.
client = create_client(url, key, ClientOptions(httpx_client=httpx.Client(timeout=30, follow_redirects=True)))
email = f"py-{uuid.uuid4().hex[:10]}@example.com"
password = "correct horse battery"
name = f"py_{uuid.uuid4().hex[:8]}"

signed_up = client.auth.sign_up({"email": email, "password": password, "options": {"data": {"username": name}}})
assert signed_up.session is not None and signed_up.user is not None, signed_up
assert signed_up.user.email == email
assert signed_up.user.user_metadata.get("username") == name
print("sign up: ok")

signed_in = client.auth.sign_in_with_password({"email": email, "password": password})
assert signed_in.session.access_token and signed_in.session.refresh_token
assert signed_in.user.id == signed_up.user.id
print("sign in: ok")

user = client.auth.get_user()
assert user.user.id == signed_up.user.id and user.user.email == email
assert user.user.created_at is not None and user.user.app_metadata.get("role") == "customer"
print("get user: ok")

renamed = f"{name}_2"
updated = client.auth.update_user({"data": {"username": renamed, "theme": "dark"}})
assert updated.user.user_metadata == {"username": renamed, "theme": "dark"}, updated.user.user_metadata
print("update user metadata: ok")

before = client.auth.get_session()
refreshed = client.auth.refresh_session()
assert refreshed.session.refresh_token != before.refresh_token
assert refreshed.session.access_token != before.access_token
assert refreshed.user.user_metadata.get("username") == renamed
print("refresh session: ok")

token = refreshed.session.access_token
client.auth.sign_out()
assert client.auth.get_session() is None
try:
    client.auth.get_user(token)
    raise AssertionError("the signed-out session's token still works")
except AuthApiError as error:
    assert error.code == "session_not_found", error.code
print("sign out: ok")

try:
    client.auth.sign_in_with_password({"email": email, "password": "wrong password"})
    raise AssertionError("a wrong password signed in")
except AuthApiError as error:
    assert error.code == "invalid_credentials", error.code
print("all steps passed")
