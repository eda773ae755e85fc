"""TLS channel credentials from PEM files."""

import grpc


def _read(name, path):
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{name}: cannot read {str(path)!r}: {e.strerror}") from e


def tls_pems(tls_ca=None, tls_cert=None, tls_key=None):
    """(CA, key, certificate) PEM bytes of PEM file paths (None for a path not
    given), or None when all are None.

    tls_ca: the CA that signed the server's certificate (None: the system's roots).
    tls_cert, tls_key: this client's certificate and key, for a server that
    requires client certificates (mTLS); both or neither.
    """
    if tls_ca is None and tls_cert is None and tls_key is None:
        return None
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("tls_cert and tls_key go together")
    return _read("tls_ca", tls_ca), _read("tls_key", tls_key), _read("tls_cert", tls_cert)


def credentials_of(pems):
    """grpc.ChannelCredentials of tls_pems' (CA, key, certificate), or None for None."""
    if pems is None:
        return None
    ca, key, cert = pems
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                        certificate_chain=cert)


def tls_credentials(tls_ca=None, tls_cert=None, tls_key=None):
    """grpc.ChannelCredentials for TLS from PEM file paths (see tls_pems), or
    None when all are None."""
    return credentials_of(tls_pems(tls_ca, tls_cert, tls_key))
