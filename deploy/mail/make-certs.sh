#!/bin/sh
# The mail catcher's TLS certificate for docker compose: a CA made once into the mail-certs volume
# and a certificate it signs for the host name "mailpit". notify trusts the CA (SMTP_CA_FILE), so
# its mail goes over STARTTLS, as it must to any host but loopback. Run by the mail-certs service;
# does nothing when the files are there.
set -eu
dir="${1:-/certs}"
[ -s "$dir/server.pem" ] && [ -s "$dir/ca.pem" ] && exit 0
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
  -subj "/CN=Splash compose mail CA" -keyout ca-key.pem -out ca.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=mailpit" \
  -keyout server-key.pem -out server.csr
printf 'subjectAltName=DNS:mailpit,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 3650 \
  -extfile server.ext -out server.pem
rm -f server.csr server.ext ca.srl ca-key.pem
chmod 644 ca.pem server.pem server-key.pem
