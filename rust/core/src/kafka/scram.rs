//! The client side of SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks it:
//! no channel binding, the server's signature checked at the end.

use std::num::NonZeroU32;

use aws_lc_rs::{digest, hmac, pbkdf2, rand::SecureRandom};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

/// Kafka stores SCRAM credentials with at least 4,096 iterations; fewer means a broken or
/// hostile server.
const MIN_ITERATIONS: u32 = 4096;
const MAX_ITERATIONS: u32 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    Sha256,
    Sha512,
}

impl Hash {
    fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            Hash::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            Hash::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }
    fn hmac(self) -> hmac::Algorithm {
        match self {
            Hash::Sha256 => hmac::HMAC_SHA256,
            Hash::Sha512 => hmac::HMAC_SHA512,
        }
    }
    fn digest(self) -> &'static digest::Algorithm {
        match self {
            Hash::Sha256 => &digest::SHA256,
            Hash::Sha512 => &digest::SHA512,
        }
    }
    fn len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha512 => 64,
        }
    }
}

/// One SCRAM exchange.
pub struct Scram {
    hash: Hash,
    password: String,
    client_first_bare: String,
    nonce: String,
    /// The server's expected final signature, once the proof is sent.
    server_signature: Option<Vec<u8>>,
}

impl Scram {
    pub fn new(hash: Hash, username: &str, password: &str) -> Result<Scram, String> {
        let mut random = [0u8; 24];
        aws_lc_rs::rand::SystemRandom::new()
            .fill(&mut random)
            .map_err(|_| "no random numbers for the SCRAM nonce".to_string())?;
        Ok(Scram::with_nonce(
            hash,
            username,
            password,
            BASE64.encode(random),
        ))
    }

    fn with_nonce(hash: Hash, username: &str, password: &str, nonce: String) -> Scram {
        let name = username.replace('=', "=3D").replace(',', "=2C");
        Scram {
            hash,
            password: password.to_string(),
            client_first_bare: format!("n={name},r={nonce}"),
            nonce,
            server_signature: None,
        }
    }

    pub fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// The proof for the server's first message.
    pub fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        let server_first = std::str::from_utf8(server_first)
            .map_err(|_| "the server's first SCRAM message is not UTF-8".to_string())?;
        let field = |name: char| {
            server_first
                .split(',')
                .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
                .ok_or_else(|| format!("the server's first SCRAM message has no '{name}='"))
        };
        let nonce = field('r')?;
        if !nonce.starts_with(&self.nonce) || nonce.len() <= self.nonce.len() {
            return Err("the server's SCRAM nonce does not extend the client's".into());
        }
        let salt = BASE64
            .decode(field('s')?)
            .map_err(|_| "the server's SCRAM salt is not base64".to_string())?;
        let iterations: u32 = field('i')?
            .parse()
            .map_err(|_| "the server's SCRAM iteration count is not a number".to_string())?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(format!(
                "the server asks for {iterations} SCRAM iterations; allowed: {MIN_ITERATIONS} to {MAX_ITERATIONS}"
            ));
        }
        let mut salted = vec![0u8; self.hash.len()];
        pbkdf2::derive(
            self.hash.pbkdf2(),
            NonZeroU32::new(iterations).ok_or("zero iterations")?,
            &salt,
            self.password.as_bytes(),
            &mut salted,
        );
        let salted = hmac::Key::new(self.hash.hmac(), &salted);
        let client_key = hmac::sign(&salted, b"Client Key");
        let stored_key = digest::digest(self.hash.digest(), client_key.as_ref());
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hmac::sign(
            &hmac::Key::new(self.hash.hmac(), stored_key.as_ref()),
            auth_message.as_bytes(),
        );
        let proof: Vec<u8> = client_key
            .as_ref()
            .iter()
            .zip(signature.as_ref())
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac::sign(&salted, b"Server Key");
        self.server_signature = Some(
            hmac::sign(
                &hmac::Key::new(self.hash.hmac(), server_key.as_ref()),
                auth_message.as_bytes(),
            )
            .as_ref()
            .to_vec(),
        );
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Checks the server's final message: it proves the server knows the credentials too.
    pub fn verify_server(&self, server_final: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(server_final).unwrap_or("");
        if let Some(error) = text.strip_prefix("e=") {
            return Err(format!("the server refused the SCRAM proof: {error}"));
        }
        let expected = self
            .server_signature
            .as_deref()
            .ok_or("no proof was sent")?;
        let given = text
            .strip_prefix("v=")
            .and_then(|v| BASE64.decode(v).ok())
            .ok_or("the server's final SCRAM message has no signature")?;
        if given != expected {
            return Err(
                "the server's SCRAM signature is wrong: it does not know the credentials".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's SCRAM-SHA-256 example.
    #[test]
    fn the_rfc_7677_exchange() {
        let mut scram = Scram::with_nonce(
            Hash::Sha256,
            "user",
            "pencil",
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        assert_eq!(scram.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let last = scram
            .client_final(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .unwrap();
        assert_eq!(
            String::from_utf8(last).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        scram
            .verify_server(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert!(scram.verify_server(b"v=AAAA").is_err());
        assert!(scram
            .verify_server(b"e=invalid-proof")
            .unwrap_err()
            .contains("invalid-proof"));
    }

    #[test]
    fn hostile_first_messages_are_refused() {
        let mut scram = Scram::with_nonce(Hash::Sha512, "u", "p", "abc".into());
        for bad in [
            "r=xyz,s=AAAA,i=4096",
            "r=abcd,s=!!,i=4096",
            "r=abcd,s=AAAA,i=1",
            "r=abcd,s=AAAA",
        ] {
            assert!(scram.client_final(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
