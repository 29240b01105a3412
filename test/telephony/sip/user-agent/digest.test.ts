import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import {
  chooseChallenge,
  type DigestChallenge,
  digestAuthorization,
  parseChallenge,
} from "../../../../src/telephony/sip/user-agent/digest.js";

const md5 = (text: string | Buffer) => createHash("md5").update(text).digest("hex");
const sha256 = (text: string | Buffer) => createHash("sha256").update(text).digest("hex");

/** The parameters of a credentials value, unquoted, for comparing with the RFC examples. */
function paramsOf(credentials: string): Record<string, string> {
  assert.match(credentials, /^Digest /);
  const params: Record<string, string> = {};
  for (const [, name, value] of credentials.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|[^,\s]+)/g)) {
    params[name as string] = (value as string).startsWith('"')
      ? (value as string).slice(1, -1).replace(/\\(.)/g, "$1")
      : (value as string);
  }
  return params;
}

function challenge(value: string): DigestChallenge {
  const parsed = parseChallenge(value);
  assert.ok(parsed, `not parsed: ${value}`);
  return parsed;
}

// RFC 7616 §3.9.1, the two challenges as the server sends them (SHA-256 first, preferred)
const rfc7616Sha256 = `Digest
    realm="http-auth@example.org",
    qop="auth, auth-int",
    algorithm=SHA-256,
    nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
    opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"`;
const rfc7616Md5 = rfc7616Sha256.replace("algorithm=SHA-256", "algorithm=MD5");
const rfc7616Request = {
  username: "Mufasa",
  password: "Circle of Life",
  method: "GET",
  uri: "/dir/index.html",
  cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ",
  nonceCount: 1,
};

describe("digestAuthorization: RFC example vectors", () => {
  it("RFC 7616 §3.9.1 with MD5", () => {
    assert.deepEqual(paramsOf(digestAuthorization(challenge(rfc7616Md5), rfc7616Request)), {
      username: "Mufasa",
      realm: "http-auth@example.org",
      nonce: "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
      uri: "/dir/index.html",
      response: "8ca523f5e9506fed4657c9700eebdbec",
      algorithm: "MD5",
      qop: "auth",
      nc: "00000001",
      cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ",
      opaque: "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS",
    });
  });

  it("RFC 7616 §3.9.1 with SHA-256, written out in full", () => {
    assert.equal(
      digestAuthorization(challenge(rfc7616Sha256), rfc7616Request),
      'Digest username="Mufasa", realm="http-auth@example.org", ' +
        'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", uri="/dir/index.html", ' +
        'response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1", algorithm=SHA-256, ' +
        'qop=auth, nc=00000001, cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", ' +
        'opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"',
    );
  });

  it("RFC 2617 §3.5", () => {
    const rfc2617 = challenge(`Digest
                 realm="testrealm@host.com",
                 qop="auth,auth-int",
                 nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093",
                 opaque="5ccc069c403ebaf9f0171e9517f40e41"`);
    const params = paramsOf(
      digestAuthorization(rfc2617, {
        username: "Mufasa",
        password: "Circle Of Life",
        method: "GET",
        uri: "/dir/index.html",
        cnonce: "0a4f113b",
        nonceCount: 1,
      }),
    );
    assert.equal(params.response, "6629fae49393a05397450978507c4ef1");
    assert.equal(params.qop, "auth");
    assert.equal(params.nc, "00000001");
    assert.equal(params.opaque, "5ccc069c403ebaf9f0171e9517f40e41");
    assert.equal(params.algorithm, "MD5");
  });
});

describe("digestAuthorization: SIP cases", () => {
  const register = {
    username: "bridge",
    password: "s3cret-pass",
    method: "REGISTER",
    uri: "sip:pbx.example.com",
    nonceCount: 1,
  };

  it("answers a challenge without qop the RFC 2069 way: no qop, nc or cnonce", () => {
    const asterisk = challenge('Digest algorithm=MD5, realm="asterisk", nonce="1cd2586e"');
    assert.deepEqual(asterisk.qop, []);
    const ha1 = md5("bridge:asterisk:s3cret-pass");
    const ha2 = md5("REGISTER:sip:pbx.example.com");
    assert.equal(
      digestAuthorization(asterisk, { ...register, cnonce: "unused" }),
      `Digest username="bridge", realm="asterisk", nonce="1cd2586e", uri="sip:pbx.example.com", ` +
        `response="${md5(`${ha1}:1cd2586e:${ha2}`)}", algorithm=MD5`,
    );
  });

  it("hashes the body for qop=auth-int when auth is not offered", () => {
    const body = Buffer.from("v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\n");
    const offered = challenge('Digest realm="sip.example.net", nonce="a1b2c3", qop="auth-int"');
    const params = paramsOf(
      digestAuthorization(offered, { ...register, method: "INVITE", cnonce: "c0ffee", nonceCount: 2, body }),
    );
    const ha1 = md5("bridge:sip.example.net:s3cret-pass");
    const ha2 = md5(`INVITE:sip:pbx.example.com:${md5(body)}`);
    assert.equal(params.qop, "auth-int");
    assert.equal(params.nc, "00000002");
    assert.equal(params.response, md5(`${ha1}:a1b2c3:00000002:c0ffee:auth-int:${ha2}`));
  });

  it("prefers qop=auth when both are offered, whatever the order", () => {
    const offered = challenge('Digest realm="r", nonce="n", qop="auth-int,auth"');
    assert.equal(paramsOf(digestAuthorization(offered, register)).qop, "auth");
  });

  it("uses H(H(user:realm:password):nonce:cnonce) as HA1 for the -sess algorithms", () => {
    const md5Sess = challenge('Digest realm="r", nonce="n0", qop="auth", algorithm=MD5-sess');
    const md5Params = paramsOf(digestAuthorization(md5Sess, { ...register, cnonce: "cn" }));
    const md5Ha1 = md5(`${md5("bridge:r:s3cret-pass")}:n0:cn`);
    assert.equal(md5Params.algorithm, "MD5-sess");
    assert.equal(
      md5Params.response,
      md5(`${md5Ha1}:n0:00000001:cn:auth:${md5("REGISTER:sip:pbx.example.com")}`),
    );
    const shaSess = challenge('Digest realm="r", nonce="n0", qop="auth", algorithm=SHA-256-sess');
    const shaParams = paramsOf(digestAuthorization(shaSess, { ...register, cnonce: "cn" }));
    const shaHa1 = sha256(`${sha256("bridge:r:s3cret-pass")}:n0:cn`);
    assert.equal(
      shaParams.response,
      sha256(`${shaHa1}:n0:00000001:cn:auth:${sha256("REGISTER:sip:pbx.example.com")}`),
    );
  });

  it("writes the nonce count as 8 hex digits and refuses one out of range", () => {
    const offered = challenge('Digest realm="r", nonce="n", qop="auth"');
    assert.equal(paramsOf(digestAuthorization(offered, { ...register, nonceCount: 255 })).nc, "000000ff");
    assert.equal(
      paramsOf(digestAuthorization(offered, { ...register, nonceCount: 0xffffffff })).nc,
      "ffffffff",
    );
    assert.throws(() => digestAuthorization(offered, { ...register, nonceCount: 0 }), RangeError);
    assert.throws(() => digestAuthorization(offered, { ...register, nonceCount: 2 ** 32 }), RangeError);
  });

  it("makes a fresh random cnonce when none is given", () => {
    const offered = challenge('Digest realm="r", nonce="n", qop="auth"');
    const first = paramsOf(digestAuthorization(offered, register));
    const second = paramsOf(digestAuthorization(offered, register));
    assert.match(first.cnonce as string, /^[0-9a-f]{32}$/);
    assert.notEqual(first.cnonce, second.cnonce);
    assert.notEqual(first.response, second.response);
  });

  it("escapes quotes and backslashes in quoted values but hashes the plain text", () => {
    const offered = challenge('Digest realm="say \\"hi\\"", nonce="n"');
    const credentials = digestAuthorization(offered, { ...register, username: 'a"b\\c' });
    assert.match(credentials, /^Digest username="a\\"b\\\\c", realm="say \\"hi\\"", /);
    const ha1 = md5('a"b\\c:say "hi":s3cret-pass');
    assert.equal(paramsOf(credentials).response, md5(`${ha1}:n:${md5("REGISTER:sip:pbx.example.com")}`));
  });
});

describe("parseChallenge", () => {
  it("reads odd spacing, case and escapes", () => {
    assert.deepEqual(
      parseChallenge(
        '  digest   REALM = "pbx \\"main\\" \\\\ site" ,nonce="4f2a\\9b",, Algorithm = sha-256 ,\tQOP="Auth-Int , auth",stale=TRUE , opaque="op"  ',
      ),
      {
        realm: 'pbx "main" \\ site',
        nonce: "4f2a9b",
        opaque: "op",
        algorithm: "SHA-256",
        qop: ["auth-int", "auth"],
        stale: true,
      },
    );
  });

  it("defaults to MD5, no qop, not stale, no opaque", () => {
    assert.deepEqual(parseChallenge('Digest realm="asterisk",nonce="6a3a9f1c"'), {
      realm: "asterisk",
      nonce: "6a3a9f1c",
      opaque: undefined,
      algorithm: "MD5",
      qop: [],
      stale: false,
    });
    assert.equal(parseChallenge('Digest realm="r", nonce="n", stale=false')?.stale, false);
  });

  it("accepts a quoted algorithm, an unquoted qop and parameters it does not know", () => {
    const parsed = parseChallenge(
      'Digest realm="r", domain="sip:example.com", nonce="n", algorithm="MD5", qop=auth, charset=UTF-8',
    );
    assert.equal(parsed?.algorithm, "MD5");
    assert.deepEqual(parsed?.qop, ["auth"]);
  });

  it("keeps the supported qop values and drops the rest", () => {
    assert.deepEqual(parseChallenge('Digest realm="r", nonce="n", qop="auth-conf,auth"')?.qop, ["auth"]);
  });

  it("refuses what it cannot answer or read", () => {
    for (const value of [
      'Basic realm="pbx"',
      'Bearer realm="pbx"',
      'Digest realm="r", nonce="n", algorithm=AKAv1-MD5',
      'Digest realm="r", nonce="n", algorithm=SHA-512-256',
      'Digest realm="r", nonce="n", qop="auth-conf"',
      'Digest realm="r", nonce="n", algorithm=MD5-sess',
      'Digest nonce="n"',
      'Digest realm="r"',
      "Digest",
      "",
      'Digest realm="r, nonce="n"',
      'Digest realm="r", realm="s", nonce="n"',
      'Digest realm="r" nonce="n"',
      'Digest realm="r", nonce',
      'Digest,realm="r", nonce="n"',
      'Digest realm="r", nonce=a/b',
    ]) {
      assert.equal(parseChallenge(value), undefined, value);
    }
  });
});

describe("chooseChallenge", () => {
  const md5Challenge = 'Digest realm="sip.example.com", nonce="m1", qop="auth", algorithm=MD5';
  const sha256Challenge = 'Digest realm="sip.example.com", nonce="s1", qop="auth", algorithm=SHA-256';

  it("prefers SHA-256 to MD5 in either order", () => {
    assert.equal(chooseChallenge([md5Challenge, sha256Challenge])?.nonce, "s1");
    assert.equal(chooseChallenge([sha256Challenge, md5Challenge])?.nonce, "s1");
  });

  it("takes the topmost among equals and skips what it cannot use", () => {
    const unsupported = 'Digest realm="sip.example.com", nonce="x", algorithm=SHA-512-256';
    assert.equal(
      chooseChallenge(['Basic realm="x"', unsupported, md5Challenge, md5Challenge.replace("m1", "m2")])
        ?.nonce,
      "m1",
    );
    assert.equal(
      chooseChallenge([sha256Challenge.replace("SHA-256", "SHA-256-sess"), sha256Challenge])?.algorithm,
      "SHA-256-sess",
    );
  });

  it("is undefined when nothing is usable", () => {
    assert.equal(chooseChallenge([]), undefined);
    assert.equal(chooseChallenge(['Basic realm="x"', "Digest garbage"]), undefined);
  });
});
