"""supabase-py's storage client against Splash's gateway, unchanged: sign in, upload, sign, download,
transform, upload through a signed upload URL.

Usage: supabase_storage_flow.py <gateway URL> <anon key> <email> <password> <image file>
Prints "all steps passed" when every step did what Supabase Storage does.
"""
import sys

import httpx
from supabase import create_client

url, key, email, password, image = sys.argv[1:6]
original = open(image, "rb").read()
client = create_client(url, key)
session = client.auth.sign_in_with_password({"email": email, "password": password})
uid = session.user.id
bucket = client.storage.from_("posts")

uploaded = bucket.upload(f"{uid}/from-python.jpg", original, {"content-type": "image/jpeg"})
assert uploaded.full_path == f"posts/{uid}/from-python.jpg", uploaded.full_path
print("uploaded", uploaded.full_path)

assert bucket.download(f"{uid}/from-python.jpg") == original
print("downloaded with the session")

signed = bucket.create_signed_url(f"{uid}/from-python.jpg", 600)
link = signed["signedURL"]
assert link.startswith(f"{url}/storage/v1/object/sign/posts/{uid}/from-python.jpg?token="), link
answer = httpx.get(link)
assert answer.status_code == 200 and answer.content == original, (answer.status_code, answer.text[:200])
print("downloaded through the signed link, without a token")

# Image transformations, each form storage3 has: a signed link carrying the transform, a download
# through the object's read rules, and a public bucket's URL.
from PIL import Image
import io

def size(data):
    return Image.open(io.BytesIO(data)).size

tile = bucket.create_signed_url(f"{uid}/from-python.jpg", 600, {"transform": {"width": 100, "height": 100}})
assert "/storage/v1/render/image/sign/posts/" in tile["signedURL"], tile
answer = httpx.get(tile["signedURL"])
assert answer.status_code == 200 and size(answer.content) == (100, 100), (answer.status_code, answer.text[:200])
small = bucket.download(f"{uid}/from-python.jpg", {"transform": {"width": 64, "height": 48, "resize": "fill"}})
assert size(small) == (64, 48), size(small)
avatars = client.storage.from_("avatars")
avatars.upload(f"{uid}/me.jpg", original, {"content-type": "image/jpeg"})
public = avatars.get_public_url(f"{uid}/me.jpg", {"transform": {"width": 32, "height": 32, "quality": 60}})
assert "/storage/v1/render/image/public/avatars/" in public, public
answer = httpx.get(public, headers={"Accept": "image/webp"})
assert answer.status_code == 200 and answer.headers["content-type"] == "image/webp" and size(answer.content) == (32, 32), answer.headers
avatars.remove([f"{uid}/me.jpg"])
print("transformed through a signed link, a download and a public URL")

many = bucket.create_signed_urls([f"{uid}/from-python.jpg", f"{uid}/missing.jpg"], 600)
assert many[0]["error"] is None and many[0]["signedURL"], many
assert many[1]["error"] and many[1]["signedURL"] is None, many

listed = [entry["name"] for entry in bucket.list(uid)]
assert "from-python.jpg" in listed and listed == sorted(listed), listed

# A signed upload URL: made with the session, used without one (a background upload), for one
# object only.
later = bucket.create_signed_upload_url(f"{uid}/later.jpg")
assert later["signed_url"].startswith(f"{url}/storage/v1/object/upload/sign/posts/{uid}/later.jpg?token="), later
anonymous = create_client(url, key).storage.from_("posts")
stored = anonymous.upload_to_signed_url(f"{uid}/later.jpg", later["token"], original, {"content-type": "image/jpeg"})
assert stored.full_path == f"posts/{uid}/later.jpg", stored.full_path
assert bucket.download(f"{uid}/later.jpg") == original
raw = httpx.put(later["signed_url"], content=original, headers={"apikey": key, "Content-Type": "image/jpeg"})
assert raw.status_code == 409 and raw.json()["error"] == "Duplicate", (raw.status_code, raw.text)
elsewhere = httpx.put(
    f"{url}/storage/v1/object/upload/sign/posts/{uid}/elsewhere.jpg?token={later['token']}",
    content=original,
    headers={"apikey": key, "Content-Type": "image/jpeg"},
)
assert elsewhere.status_code == 400 and elsewhere.json()["error"] == "InvalidSignature", (elsewhere.status_code, elsewhere.text)
print("uploaded through a signed upload URL, without a session, to its one object")

removed = bucket.remove([f"{uid}/from-python.jpg", f"{uid}/later.jpg"])
assert len(removed) == 2, removed
print("all steps passed")
