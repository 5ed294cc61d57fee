"""What the supabase-py scripts beside this one share: signing in, and a step that must hold or
must fail with PostgREST's error code (the first that does not ends the script, exit 1)."""
import sys

from postgrest.exceptions import APIError
from supabase import create_client


def signed_in(url, anon, email, password):
    client = create_client(url, anon)
    client.auth.sign_in_with_password({"email": email, "password": password})
    return client


def expect(condition, what):
    if not condition:
        print("FAILED:", what)
        sys.exit(1)


def expect_error(call, code, what):
    try:
        result = call()
    except APIError as error:
        expect(error.code == code and error.message, f"{what}: {error.code} {error.message!r}, expected {code}")
        return error
    expect(False, f"{what}: answered {result!r}, expected the error {code}")
