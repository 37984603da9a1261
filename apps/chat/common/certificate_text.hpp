#pragma once
// certificate_text: a certificate in one line for people (log lines, the client's "connected"
// line): its subject, serial, issuer and expiry, e.g.
//
//   CN=chat.example.org, serial 1F3A, issued by CN=Example CA, valid until Dec 24 20:12:13 2027 GMT
//
// The serial is what tells two certificates of the same name apart (after a reload, say).

#include <string>

struct x509_st;  // OpenSSL's X509

namespace strix::chat {

/// The certificate x in one line. Any thread.
std::string describe_certificate(const x509_st* x);

/// The first certificate of a PEM file in one line, or why it cannot be read. Any thread
/// (reads the file: not on a shard).
std::string describe_certificate_file(const std::string& path);

}  // namespace strix::chat
