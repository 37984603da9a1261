#pragma once
// Certificates for TLS tests, made with OpenSSL's API into a temporary directory (no openssl
// command line, no key committed): a CA, a server certificate it signs for localhost and
// 127.0.0.1, an expired one, one for another host name, and a second CA that signs nothing here.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace strix::test {

struct test_certs {
    std::string dir;
    std::string ca;                       // trust anchor of the certificates below
    std::string cert, key;                // localhost, 127.0.0.1, valid now
    std::string expired_cert, expired_key;
    std::string other_host_cert, other_host_key;  // only for other.example
    std::string other_ca;                 // a CA that signed none of them
    std::string cert2, key2;              // a second valid identity (reload tests)

    test_certs() {
        char tmpl[] = "/tmp/strix-certs-XXXXXX";
        if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
        dir = tmpl;
        EVP_PKEY* ca_key = new_key();
        X509* ca_cert = make_cert("strix test CA", ca_key, nullptr, nullptr, "", 0, 30, true);
        ca = write_cert("ca.pem", ca_cert);
        auto issue = [&](const char* name, const char* san, long from_days, long to_days, std::string& c,
                         std::string& k) {
            EVP_PKEY* pkey = new_key();
            X509* x = make_cert(name, pkey, ca_cert, ca_key, san, from_days, to_days, false);
            c = write_cert(std::string(name) + ".pem", x);
            k = write_key(std::string(name) + ".key", pkey);
            X509_free(x);
            EVP_PKEY_free(pkey);
        };
        issue("server", "DNS:localhost,IP:127.0.0.1", -1, 30, cert, key);
        issue("server2", "DNS:localhost,IP:127.0.0.1", -1, 30, cert2, key2);
        issue("expired", "DNS:localhost,IP:127.0.0.1", -30, -1, expired_cert, expired_key);
        issue("other", "DNS:other.example", -1, 30, other_host_cert, other_host_key);
        EVP_PKEY* k2 = new_key();
        X509* ca2 = make_cert("strix other CA", k2, nullptr, nullptr, "", 0, 30, true);
        other_ca = write_cert("other-ca.pem", ca2);
        X509_free(ca2);
        EVP_PKEY_free(k2);
        X509_free(ca_cert);
        EVP_PKEY_free(ca_key);
    }
    ~test_certs() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    test_certs(const test_certs&) = delete;
    test_certs& operator=(const test_certs&) = delete;

    std::string path(const std::string& name) const { return dir + "/" + name; }

    /// Writes text to a file in the directory (broken PEM files for the error tests).
    std::string write_text(const std::string& name, const std::string& text) const {
        const std::string p = path(name);
        FILE* f = std::fopen(p.c_str(), "w");
        std::fputs(text.c_str(), f);
        std::fclose(f);
        return p;
    }

private:
    static EVP_PKEY* new_key() {
        EVP_PKEY* k = EVP_EC_gen("P-256");
        if (!k) throw std::runtime_error("EVP_EC_gen");
        return k;
    }

    static X509* make_cert(const char* cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, const std::string& san,
                           long from_days, long to_days, bool is_ca) {
        X509* x = X509_new();
        X509_set_version(x, 2);
        static long serial = 1;
        ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
        X509_gmtime_adj(X509_getm_notBefore(x), from_days * 86400);
        X509_gmtime_adj(X509_getm_notAfter(x), to_days * 86400);
        X509_set_pubkey(x, key);
        X509_NAME* name = X509_get_subject_name(x);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
        X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, issuer ? issuer : x, x, nullptr, nullptr, 0);
        auto add = [&](int nid, const char* value) {
            X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
            if (!e) throw std::runtime_error(std::string("extension ") + value);
            X509_add_ext(x, e, -1);
            X509_EXTENSION_free(e);
        };
        add(NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE");
        if (is_ca) add(NID_key_usage, "critical,keyCertSign,cRLSign");
        add(NID_subject_key_identifier, "hash");
        if (!san.empty()) add(NID_subject_alt_name, san.c_str());
        if (!X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256())) throw std::runtime_error("X509_sign");
        return x;
    }

    std::string write_cert(const std::string& name, X509* x) const {
        const std::string p = path(name);
        FILE* f = std::fopen(p.c_str(), "w");
        PEM_write_X509(f, x);
        std::fclose(f);
        return p;
    }
    std::string write_key(const std::string& name, EVP_PKEY* k) const {
        const std::string p = path(name);
        FILE* f = std::fopen(p.c_str(), "w");
        PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
        std::fclose(f);
        return p;
    }
};

}  // namespace strix::test
