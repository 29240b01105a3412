#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine with Node 20, then runs it:
# typecheck, lint and every test on SQLite and on PostgreSQL. `.ci/run` and the README's Quick
# start call this same script.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_install() {
  [[ -n "${apt_updated:-}" ]] || { apt-get update -qq; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# better-sqlite3 compiles from source where no prebuilt binary can be fetched.
for tool in python3 make g++; do
  command -v "$tool" >/dev/null || apt_install python3 make g++
done

# Real SIP peers for the telephony tests: SIPp (Debian sip-tester) and baresip.
command -v sipp >/dev/null || apt_install sip-tester
command -v baresip >/dev/null || apt_install baresip-core
# Kamailio, the SIP edge in front of several instances (deploy/kamailio, test/deploy).
command -v kamailio >/dev/null || apt_install kamailio
# Its TLS module, for the TLS trunk test (test/telephony/e2e/tls-trunk.test.ts).
dpkg -s kamailio-tls-modules >/dev/null 2>&1 || apt_install kamailio-tls-modules
# coturn, the TURN server of deploy/coturn, for its test (test/deploy/coturn.test.ts), which runs
# its own turnserver on free loopback ports.
command -v turnserver >/dev/null || apt_install coturn
# dnsmasq serves the NAPTR and SRV records of the trunk failover tests (dnsmasq-base: no service).
command -v dnsmasq >/dev/null || apt_install dnsmasq-base
# tshark proves what is on the wire (the audio sent to SIPp callers, which record nothing).
command -v tshark >/dev/null || apt_install tshark
# openssl makes the test CA and certificates for SIP over TLS.
command -v openssl >/dev/null || apt_install openssl
# Spoken invitations naming the owner and the conference (optional when running, tested here).
command -v espeak-ng >/dev/null || apt_install espeak-ng
# Headless Chromium for the moderator console's browser tests (driven by playwright-core).
command -v chromium >/dev/null || apt_install chromium
# promtool checks deploy/prometheus and the service's metrics (test/deploy/monitoring.test.ts). It
# comes only with Debian's Prometheus server, whose postinst would start the server on :9090: no
# recommends (prometheus-node-exporter, another daemon on :9100), and while it installs a
# policy-rc.d (invoke-rc.d's and deb-systemd-invoke's local policy) answers 101, "do not start",
# unless the machine has one of its own (Docker images do).
if ! command -v promtool >/dev/null; then
  if [[ -e /usr/sbin/policy-rc.d ]]; then
    apt_install --no-install-recommends prometheus
  else
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    printf '#!/bin/sh\n# scripts/test-full.sh: no service starts while it installs packages.\nexit 101\n' \
      >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    apt_install --no-install-recommends prometheus
    rm -f /usr/sbin/policy-rc.d
    trap - EXIT
  fi
fi

# PostgreSQL for the production-store half of the suite.
: "${BRIDGELINE_TEST_DATABASE_URL:=postgres://postgres@127.0.0.1:5432/test}"
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  command -v pg_ctlcluster >/dev/null || apt_install postgresql
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
# A stock Debian cluster refuses password-less TCP logins: give the test role a password then.
if ! PGCONNECT_TIMEOUT=3 psql "$BRIDGELINE_TEST_DATABASE_URL" -qtAc 'select 1' >/dev/null 2>&1 && id postgres >/dev/null 2>&1; then
  su postgres -c "psql -qc \"alter user postgres password 'postgres'\"" >/dev/null
  su postgres -c "createdb test" 2>/dev/null || true
  BRIDGELINE_TEST_DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/test
fi
export BRIDGELINE_TEST_DATABASE_URL

npm install --no-audit --no-fund
# The next install on this machine unpacks the SQLite binding compiled by this one.
node scripts/keep-sqlite-binding.cjs
npm test
