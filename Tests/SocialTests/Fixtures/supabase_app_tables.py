"""The three apps' own table calls, verbatim, through supabase-py against Splash's gateway.

Each app's data code as its write-up describes it: SplashEdit's liked_photos (PhotoModel), the
Upload System's posts (it picks the post id, uploads posts/{userId}/{postId}.jpg, then inserts),
TrackBite's users (hasCompletedOnboarding) and UserBoard's profiles (its username). UUIDs go as
supabase-swift sends them (Swift's uuidString: upper case). Then the hostile cases.

Usage: supabase_app_tables.py <gateway url> <anon key> <password> <ana email> <ben email> <image file>
Prints "all steps passed", or the first step that failed (and exits 1).
"""
import sys
import uuid

import httpx
from supabase import create_client

import supabase_checks as checks
from supabase_checks import expect, expect_error

url, anon, password, ana_email, ben_email, image = sys.argv[1:7]
jpeg = open(image, "rb").read()


def signed_in(email):
    return checks.signed_in(url, anon, email, password)


def swift(value):
    """A UUID as Swift's uuidString writes it."""
    return str(value).upper()


ana, ben = signed_in(ana_email), signed_in(ben_email)
ana_id, ben_id = ana.auth.get_user().user.id, ben.auth.get_user().user.id
token = ana.auth.get_session().access_token

# --- SplashEdit: PhotoModel(id, user_id, unsplash_id, original_url, created_at) ---------------
photo = httpx.get(f"{url}/v1/photos/mate-aqua-01", headers={"apikey": anon, "Authorization": f"Bearer {token}"}).json()
catalog_url = photo["urls"]["regular"]
like_id = uuid.uuid4()
model = {"id": swift(like_id), "user_id": swift(ana_id), "unsplash_id": "mate-aqua-01", "original_url": catalog_url,
         "created_at": "2026-11-29T10:00:00Z"}
row = ana.table("liked_photos").insert(model).execute().data
expect(len(row) == 1 and row[0]["id"] == str(like_id) and row[0]["user_id"] == ana_id, f"liked_photos insert: {row}")
expect(row[0]["unsplash_id"] == "mate-aqua-01" and row[0]["original_url"] == catalog_url, f"liked_photos columns: {row}")
# An id of null: the like gets one. An https URL of Unsplash's images is kept as it is.
unsplash_url = "https://images.unsplash.com/photo-1?ixid=abc&w=1080"
made = ana.table("liked_photos").insert({"id": None, "user_id": swift(ana_id), "unsplash_id": "mate-blinds-02",
                                         "original_url": unsplash_url}).execute().data
expect(len(made) == 1 and uuid.UUID(made[0]["id"]) and made[0]["original_url"] == unsplash_url, f"a made id: {made}")
mine = ana.table("liked_photos").select("*").eq("user_id", swift(ana_id)).order("created_at", desc=True).execute().data
expect([r["unsplash_id"] for r in mine] == ["mate-blinds-02", "mate-aqua-01"], f"the caller's liked photos: {mine}")
expect(set(mine[0]) == {"id", "user_id", "unsplash_id", "original_url", "created_at"}, f"select=*: {mine[0]}")
# The toggle: is it liked? then unlike by unsplash_id, and by id.
expect(len(ana.table("liked_photos").select("id").eq("unsplash_id", "mate-blinds-02").execute().data) == 1, "liked?")
gone = ana.table("liked_photos").delete().eq("unsplash_id", "mate-blinds-02").execute().data
expect([r["unsplash_id"] for r in gone] == ["mate-blinds-02"], f"unlike by unsplash_id: {gone}")
# The same like seen in Splash's own likes table.
expect([r["photo_key"] for r in ana.table("likes").select("photo_key").execute().data] == ["unsplash:mate-aqua-01"], "likes table")
expect_error(lambda: ana.table("liked_photos").insert({"unsplash_id": "mate-aqua-01"}).execute(), "23505", "a second like")
expect_error(lambda: ana.table("liked_photos").insert({"unsplash_id": "mate-dune-03", "original_url": "https://evil.example/x.jpg"})
             .execute(), "22023", "an original_url of no Unsplash host")
expect_error(lambda: ana.table("liked_photos").insert({"unsplash_id": "mate-dune-03", "original_url": unsplash_url.replace("https", "http")})
             .execute(), "22023", "an http URL")
expect_error(lambda: ana.table("liked_photos").insert({"id": swift(like_id), "unsplash_id": "mate-dune-03"}).execute(), "23505",
             "an id another like has")
expect_error(lambda: ana.table("liked_photos").insert({"id": "not-a-uuid", "unsplash_id": "mate-dune-03"}).execute(), "22P02", "a bad id")
# Another user's rows, through every name: invisible, untouchable.
expect(ben.table("liked_photos").select("*").eq("user_id", ana_id).execute().data == [], "Ben reads Ana's liked photos")
expect(ben.table("liked_photos").delete().eq("id", swift(like_id)).execute().data == [], "Ben deletes Ana's like by id")
expect_error(lambda: ben.table("liked_photos").insert({"user_id": swift(ana_id), "unsplash_id": "mate-dune-03"}).execute(), "42501",
             "a like for Ana")
expect(len(ana.table("liked_photos").select("id").execute().data) == 1, "Ana's like survives Ben")
expect([r["id"] for r in ana.table("liked_photos").delete().eq("id", swift(like_id)).execute().data] == [str(like_id)], "unlike by id")

# --- The Upload System: pick the id, upload posts/{userId}/{postId}.jpg, insert ---------------
post_id = uuid.uuid4()
path = f"{swift(ana_id)}/{swift(post_id)}.jpg"
ana.storage.from_("posts").upload(path, jpeg, {"content-type": "image/jpeg"})
post = ana.table("posts").insert({"id": swift(post_id), "author": swift(ana_id), "media_key": path, "caption": "Harbour"}).execute().data
expect(len(post) == 1 and post[0]["id"] == str(post_id), f"posts insert with a chosen id: {post}")
expect(post[0]["author"] == ana_id and post[0]["user_id"] == ana_id, f"author and user_id: {post}")
expect(post[0]["media_key"] == f"posts/{path}" and post[0]["object_key"] == f"posts/{path}", f"media_key and object_key: {post}")
# Filters, select and order by the app's names; the key with or without the bucket's prefix.
by_author = ben.table("posts").select("id,author,media_key,caption").eq("author", swift(ana_id)).order("created_at", desc=True).execute().data
expect([r["id"] for r in by_author] == [str(post_id)] and set(by_author[0]) == {"id", "author", "media_key", "caption"}, f"{by_author}")
expect(len(ben.table("posts").select("id").eq("media_key", path).execute().data) == 1, "media_key without the prefix")
expect(len(ben.table("posts").select("id").eq("media_key", f"posts/{path}").execute().data) == 1, "media_key with the prefix")
expect(len(ben.table("posts").select("id").order("author").limit(50).execute().data) >= 1, "order by author")
# The post is the typed API's post: the feed shows it with its caption.
feed = httpx.get(f"{url}/v1/posts/{post_id}", headers={"Authorization": f"Bearer {token}"})
expect(feed.status_code == 200 and feed.json()["caption"] == "Harbour", f"the typed API's post: {feed.status_code} {feed.text[:200]}")
# A client-chosen id that exists (Ben's post picking Ana's id); a post for someone else; both names
# disagreeing; the object attached already.
ben_path = f"{ben_id}/{uuid.uuid4()}.jpg"
ben.storage.from_("posts").upload(ben_path, jpeg, {"content-type": "image/jpeg"})
expect_error(lambda: ben.table("posts").insert({"id": swift(post_id), "author": swift(ben_id), "media_key": ben_path}).execute(), "23505",
             "a chosen id that exists")
expect_error(lambda: ben.table("posts").insert({"author": swift(ana_id), "media_key": ben_path}).execute(), "42501", "a post as Ana")
expect_error(lambda: ben.table("posts").insert({"author": swift(ben_id), "user_id": swift(ana_id), "media_key": ben_path}).execute(),
             "42701", "author and user_id disagreeing")
expect_error(lambda: ben.table("posts").insert({"author": swift(ben_id), "media_key": path}).execute(), "42501", "Ana's object")
expect(ben.table("posts").delete().eq("author", swift(ana_id)).execute().data == [], "Ben deletes Ana's post by author")
expect(len(ben.table("posts").insert({"author": swift(ben_id), "media_key": f"posts/{ben_path}"}).execute().data) == 1,
       "Ben's post after his failed tries (the upload still his)")

# --- TrackBite: users(id, email, role, hasCompletedOnboarding, created_at) --------------------
me = ana.table("users").select("*").eq("id", swift(ana_id)).single().execute().data
expect(me["id"] == ana_id and me["email"] == ana_email and me["role"] == "customer" and me["hasCompletedOnboarding"] is False, f"{me}")
expect([r["id"] for r in ana.table("users").select("id").execute().data] == [ana_id], "only one's own row")
done = ana.table("users").update({"hasCompletedOnboarding": True}).eq("id", swift(ana_id)).execute().data
expect(len(done) == 1 and done[0]["hasCompletedOnboarding"] is True, f"onboarding completed: {done}")
again = ana.table("users").update({"hasCompletedOnboarding": True}).eq("id", swift(ana_id)).execute().data
expect(len(again) == 1, f"completing it again changes nothing and is fine: {again}")
expect_error(lambda: ana.table("users").update({"hasCompletedOnboarding": False}).eq("id", swift(ana_id)).execute(), "42501",
             "onboarding back to false")
expect_error(lambda: ana.table("users").update({"role": "admin"}).eq("id", swift(ana_id)).execute(), "42501", "a role change")
expect_error(lambda: ana.table("users").update({"email": "someone@else.example"}).eq("id", swift(ana_id)).execute(), "42501",
             "an address change")
expect(ana.table("users").select("role").eq("id", ana_id).single().execute().data["role"] == "customer", "the role unchanged")
expect(ben.table("users").update({"hasCompletedOnboarding": True}).eq("id", swift(ana_id)).execute().data == [], "Ben onboards Ana")
expect(ben.table("users").select("*").eq("id", ana_id).execute().data == [], "Ben reads Ana's account")
expect(create_client(url, anon).table("users").select("*").execute().data == [], "the anonymous caller reads users")
expect_error(lambda: ana.table("users").insert({"email": "x@example.com"}).execute(), "42501", "an account made through users")

# --- UserBoard: profiles(id, username, avatar_url, created_at) --------------------------------
name = "ana_" + uuid.uuid4().hex[:8]
changed = ana.table("profiles").update({"username": name}).eq("id", swift(ana_id)).execute().data
expect(len(changed) == 1 and changed[0]["username"] == name, f"username changed: {changed}")
expect(ben.table("profiles").select("username").eq("id", ana_id).single().execute().data["username"] == name, "seen by Ben")
expect_error(lambda: ben.table("profiles").update({"username": name}).eq("id", swift(ben_id)).execute(), "23505", "a taken username")
expect_error(lambda: ben.table("profiles").update({"username": "no spaces allowed!"}).eq("id", swift(ben_id)).execute(), "23514",
             "a bad username")
expect(ben.table("profiles").update({"username": "ben_took_it"}).eq("id", swift(ana_id)).execute().data == [], "Ben renames Ana")
expect(ana.table("profiles").select("username").eq("id", ana_id).single().execute().data["username"] == name, "Ana's name kept")
expect_error(lambda: ana.table("profiles").update({"id": swift(ben_id)}).eq("id", swift(ana_id)).execute(), "PGRST204", "an id change")
# An avatar in Storage's public bucket (behind auth's public URL, the default here) is shown as its
# 256 px variant; any other URL as written.
stored = f"http://localhost:8080/storage/v1/object/public/avatars/{ana_id}/me.jpg"
ana.table("profiles").update({"avatar_url": stored}).eq("id", swift(ana_id)).execute()
shown = ben.table("profiles").select("avatar_url").eq("id", ana_id).single().execute().data["avatar_url"]
expect(shown == f"http://localhost:8080/storage/v1/render/image/public/avatars/{ana_id}/me.jpg?width=256&height=256", f"sized: {shown}")
ana.table("profiles").update({"avatar_url": "https://example.com/ana.png?v=2"}).eq("id", swift(ana_id)).execute()
shown = ben.table("profiles").select("avatar_url").eq("id", ana_id).single().execute().data["avatar_url"]
expect(shown == "https://example.com/ana.png?v=2", f"as written: {shown}")

print("all steps passed")
