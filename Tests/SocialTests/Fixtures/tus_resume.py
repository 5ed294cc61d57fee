"""tuspy, the TUS client from PyPI, against Splash's resumable uploads: an upload interrupted after
each chunk and resumed by a new client object from the stored URL alone.

Usage: tus_resume.py <storage URL> <access token> <bucket> <object name> <file> <chunk bytes> [<anon key>]
Prints "resumed <n> times" and "all steps passed" when the upload ended whole.
"""
import base64
import os
import sys

from tusclient import client as tus

url, token, bucket, name, path, chunk = sys.argv[1:7]
chunk = int(chunk)
headers = {"Authorization": f"Bearer {token}"}
if len(sys.argv) > 7:
    headers["apikey"] = sys.argv[7]  # through the gateway, as a Supabase client sends it
metadata = {"bucketName": bucket, "objectName": name, "contentType": "image/jpeg", "cacheControl": "3600"}
size = os.path.getsize(path)

first = tus.TusClient(f"{url}/upload/resumable", headers=headers).uploader(file_path=path, chunk_size=chunk, metadata=metadata)
first.upload_chunk()
stored_url = first.url
assert stored_url and "/upload/resumable/" in stored_url, stored_url
assert first.offset == min(chunk, size), first.offset
resumed = 0
while True:
    # A new client and uploader, as after an app restart: the URL is all that was kept.
    uploader = tus.TusClient(f"{url}/upload/resumable", headers=headers).uploader(file_path=path, chunk_size=chunk, url=stored_url)
    assert uploader.offset > 0, uploader.offset
    if uploader.offset == size:
        break
    uploader.upload_chunk()
    resumed += 1
    if uploader.offset == size:
        break
print(f"resumed {resumed} times")
print("all steps passed")
