"""The topics of the doc web: a definition as a user would write it, and the target pages, chosen by reading them.

A target is a page (host and path, language left out: ``/mod/mod_ssl.html``
is every language of it) that someone asking for the topic wants: its subject
is the topic, or a whole section of it is. Pages that only use the topic's
words in passing (release notes, indexes, tables of contents, a reference
page listing every directive) are not targets. Each target says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.focusreal.docweb import DOMAIN


@dataclass(frozen=True)
class Target:
    host: str  # without DOMAIN
    path: str  # language-free: the page in any language
    why: str

    @property
    def key(self) -> tuple[str, str]:
        return self.host + DOMAIN, self.path


@dataclass(frozen=True)
class Topic:
    key: str
    name: str
    definition: str  # topicdefinition.txt (Combine's WEIGHT: TERMS=CLASS-LIST)
    targets: tuple[Target, ...]
    #: The seed of the "offtopic" seed set: a page about something else, on the handbook, the one host from which
    #: links lead to every host with targets (nothing links to the handbook; git is reached only from the Debian
    #: Reference; nothing links to bash).
    offtopic: str

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(target.host for target in self.targets))


TOPICS: tuple[Topic, ...] = (
    Topic(
        key="tls",
        name="TLS/SSL and certificates",
        definition="""\
# TLS/SSL encryption and X.509 certificates: setting up, using and checking them.
# WEIGHT: TERMS=CLASS-LIST
100: ssl=TLS
100: tls=TLS
80: x\\.?509=TLS.Certificates
60: certificates?=TLS.Certificates
50: certificate authority=TLS.Certificates
50: openssl=TLS
40: private key=TLS.Certificates
40: public key=TLS.Certificates
40: certificate revocation=TLS.Certificates
30: https=TLS
30: handshake=TLS
30: cipher suites?=TLS
30: ciphers?=TLS
30: client certificates?=TLS.Certificates
20: encryption=TLS
20: key pairs?=TLS.Certificates
20: trusted=TLS
10: secure connections?=TLS
""",
        targets=(
            Target("httpd", "/mod/mod_ssl.html", "mod_ssl: the module and every SSL*/certificate directive"),
            Target("httpd", "/ssl/ssl_intro.html", "SSL/TLS introduction: cryptography, certificates, the protocol"),
            Target("httpd", "/ssl/ssl_howto.html", "SSL/TLS how-to: basic configuration, client certificates"),
            Target("httpd", "/ssl/ssl_faq.html", "SSL/TLS FAQ: making and checking keys and certificates"),
            Target("httpd", "/ssl/ssl_compat.html", "SSL/TLS compatibility: mod_ssl against other SSL servers"),
            Target("httpd", "/mod/mod_md.html", "mod_md: certificates obtained and renewed over ACME"),
            Target("httpd", "/ssl/index.html", "SSL/TLS strong encryption: the manual's overview of its SSL documents"),
            Target("httpd", "/mod/mod_nw_ssl.html", "mod_nw_ssl: SSL encryption on NetWare"),
            Target("postgresql", "/ssl-tcp.html", "Secure TCP/IP connections with SSL: the server's certificates"),
            Target("postgresql", "/libpq-ssl.html", "libpq SSL support: sslmode, verifying the server's certificate"),
            Target("postgresql", "/auth-cert.html", "Certificate authentication: logging in with a client certificate"),
            Target("postgresql", "/sslinfo.html", "sslinfo: the client's certificate and the SSL connection in SQL"),
            Target("postgresql", "/runtime-config-connection.html",
                   "Connection settings: its SSL section (ssl_cert_file, ssl_ciphers, ssl_min_protocol_version)"),
            Target("python", "/library/ssl.html", "ssl: the TLS/SSL wrapper, contexts, certificates"),
            Target("handbook", "/sect.x509-cert.html", "X.509 certificates: a PKI with easy-rsa"),
        ),
        offtopic="http://handbook.docs.test/en-US/sect.config-printing.html",
    ),
    Topic(
        key="backup",
        name="backup and restore",
        definition="""\
# Backing up data and restoring it: dumps, archives, point-in-time recovery.
# WEIGHT: TERMS=CLASS-LIST
100: backups?=BK
80: restor(e|es|ing)=BK.Restore
60: back(ing)? up=BK
50: dumps?=BK.Dump
50: recovery=BK.Restore
40: point-in-time=BK.Restore
40: archiv(e|es|ing)=BK
30: snapshots?=BK
30: incremental=BK
30: copies of (the|your) data=BK
20: disaster=BK.Restore
20: rsync=BK
10: data loss=BK
""",
        targets=(
            Target("postgresql", "/backup.html", "Backup and Restore: the chapter's overview of the three methods"),
            Target("postgresql", "/backup-dump.html", "SQL dump: pg_dump and restoring the dump"),
            Target("postgresql", "/backup-file.html", "File system level backup"),
            Target("postgresql", "/continuous-archiving.html", "Continuous archiving and point-in-time recovery"),
            Target("postgresql", "/app-pgdump.html", "pg_dump: extract a database into a script or archive"),
            Target("postgresql", "/app-pgrestore.html", "pg_restore: restore a database from a pg_dump archive"),
            Target("postgresql", "/app-pg-dumpall.html", "pg_dumpall: dump a whole cluster"),
            Target("postgresql", "/app-pgbasebackup.html", "pg_basebackup: a base backup of a running cluster"),
            Target("postgresql", "/app-pgverifybackup.html", "pg_verifybackup: check a base backup's integrity"),
            Target("sqlite", "/backup.html", "The online backup API, with examples of backing up a database"),
            Target("sqlite", "/c3ref/backup_finish.html", "The backup API's functions, sqlite3_backup_init/step/finish"),
            Target("handbook", "/sect.backup.html", "Backup: rsync, dirvish, strategies for a server"),
            Target("reference", "/ch10.html", "Data management: its section on backup and recovery tools"),
        ),
        offtopic="http://handbook.docs.test/en-US/sect.dhcp.html",
    ),
    Topic(
        key="encoding",
        name="character encodings and Unicode",
        definition="""\
# Character sets, encodings and Unicode: converting text, locales.
# WEIGHT: TERMS=CLASS-LIST
100: unicode=ENC
100: character encodings?=ENC
80: character sets?=ENC
60: utf-?8=ENC
50: utf-?16=ENC
40: encod(e|ed|ing)s?=ENC
40: decod(e|ed|ing)=ENC
40: charsets?=ENC
40: code ?points?=ENC
30: iso-?8859-?1?=ENC
30: latin-?1=ENC
30: codecs?=ENC
30: locales?=ENC.Locale
20: multibyte=ENC
20: iconv=ENC
20: ascii=ENC
10: byte order mark=ENC
""",
        targets=(
            Target("python", "/howto/unicode.html", "Unicode HOWTO: code points, encodings, Unicode in Python"),
            Target("python", "/library/codecs.html", "codecs: the codec registry and the standard encodings"),
            Target("python", "/library/unicodedata.html", "unicodedata: the Unicode character database"),
            Target("python", "/c-api/unicode.html", "Unicode objects and codecs in the C API"),
            Target("python", "/c-api/codec.html", "The codec registry in the C API"),
            Target("python", "/library/email.charset.html", "email.charset: character sets and encodings of mail"),
            Target("postgresql", "/multibyte.html", "Character set support: server and client encodings, conversion"),
            Target("postgresql", "/charset.html", "Localization: the chapter on locales, collations, character sets"),
            Target("postgresql", "/infoschema-character-sets.html", "The character_sets view: the encodings available"),
            Target("httpd", "/mod/mod_charset_lite.html", "mod_charset_lite: character set translation of content"),
            Target("reference", "/ch08.html", "I18N and L10N: locales and character encodings on Debian"),
            Target("reference", "/ch11.html", "Data conversion: its section on text encoding conversion (iconv)"),
            Target("handbook", "/basic-configuration.html", "Configuring the system for another language: locales, UTF-8"),
        ),
        offtopic="http://handbook.docs.test/en-US/sect.quotas.html",
    ),
    Topic(
        key="regex",
        name="regular expressions",
        definition="""\
# Regular expressions: their syntax and the tools and functions that match them.
# WEIGHT: TERMS=CLASS-LIST
100: regular expressions?=RE
80: regex(p|es)?=RE
60: pattern matching=RE
50: metacharacters?=RE
40: pcre=RE
20: posix=RE
30: backreferences?=RE
30: character class(es)?=RE
30: quantifiers?=RE
30: wildcards?=RE
30: match(es|ing)?=RE
20: patterns?=RE
20: grep=RE
20: greedy=RE
""",
        targets=(
            Target("python", "/library/re.html", "re: Python's regular expression module and syntax"),
            Target("python", "/howto/regex.html", "Regular Expression HOWTO"),
            Target("postgresql", "/functions-matching.html", "Pattern matching: LIKE, SIMILAR TO and POSIX regular expressions"),
            Target("httpd", "/rewrite/intro.html", "mod_rewrite introduction: its section on regular expressions"),
            Target("httpd", "/mod/mod_rewrite.html", "mod_rewrite: RewriteRule and RewriteCond match PCRE patterns"),
            Target("git", "/git-grep.html", "git grep: basic, extended and Perl regular expressions"),
            Target("sqlite", "/lang_expr.html", "SQL expressions: the LIKE, GLOB, REGEXP and MATCH operators"),
            Target("reference", "/ch01.html", "GNU/Linux tutorials: its section on regular expressions (BRE/ERE)"),
        ),
        offtopic="http://handbook.docs.test/en-US/sect.office-suites.html",
    ),
)


def topic_named(key: str) -> Topic:
    for topic in TOPICS:
        if topic.key == key:
            return topic
    raise KeyError(key)
