#include "certificate_text.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace strix::chat {
namespace {

std::string name_text(const X509_NAME* name) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    if (!bio || name == nullptr) return "?";
    // RFC 2253 order and escaping, without the multi-line layout: "CN=x,O=y".
    X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string("(empty)");
}

std::string time_text(const ASN1_TIME* t) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    if (!bio || t == nullptr) return "?";
    ASN1_TIME_print(bio.get(), t);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string("?");
}

std::string serial_text(const ASN1_INTEGER* serial) {
    std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(ASN1_INTEGER_to_BN(serial, nullptr), &BN_free);
    if (!bn) return "?";
    char* hex = BN_bn2hex(bn.get());
    if (hex == nullptr) return "?";
    std::string out(hex);
    OPENSSL_free(hex);
    return out;
}

}  // namespace

std::string describe_certificate(const x509_st* x) {
    if (x == nullptr) return "(no certificate)";
    return name_text(X509_get_subject_name(x)) + ", serial " + serial_text(X509_get0_serialNumber(x)) + ", issued by " +
           name_text(X509_get_issuer_name(x)) + ", valid until " + time_text(X509_get0_notAfter(x));
}

std::string describe_certificate_file(const std::string& path) {
    std::unique_ptr<FILE, decltype(&std::fclose)> f(std::fopen(path.c_str(), "r"), &std::fclose);
    if (!f) return path + ": " + std::strerror(errno);
    std::unique_ptr<X509, decltype(&X509_free)> x(PEM_read_X509(f.get(), nullptr, nullptr, nullptr), &X509_free);
    if (!x) {
        ERR_clear_error();  // not left for the next OpenSSL call on this thread to report
        return path + ": no PEM certificate";
    }
    return describe_certificate(x.get()) + " (" + path + ")";
}

}  // namespace strix::chat
