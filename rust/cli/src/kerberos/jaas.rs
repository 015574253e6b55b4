//! JAAS login configurations, as the Java clients read them: Kafka's `sasl.jaas.config` text
//! (`<loginModuleClass> <controlFlag> (<option>=<value>)* ;`) and JAAS files
//! (`Section { entry; ... };`), with the token rules of Java's `StreamTokenizer` that both use:
//! values quoted with `"` or `'` (with backslash escapes), `//` and `/* */` comments, and a `/`
//! outside quotes starting a comment. The jar's `InlineJaas.java` parses the inline text the
//! same way. Messages name positions, never a token: any token may be part of a password.

use std::collections::HashMap;

/// One login module entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub module: String,
    pub options: HashMap<String, String>,
}

impl Entry {
    /// Whether the module is Kerberos': OpenJDK's `com.sun.security.auth.module` or IBM's.
    pub fn is_kerberos(&self) -> bool {
        self.module.trim().ends_with(".Krb5LoginModule")
    }

    pub fn option(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }

    /// A boolean option as Krb5LoginModule reads it: `true` in any case, else false.
    pub fn flag(&self, name: &str) -> bool {
        self.option(name)
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
    }
}

/// Why a JAAS text does not parse: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JaasError(pub String);

/// The entries of a `sasl.jaas.config` text, which Kafka's client allows exactly one of.
pub fn parse_inline(text: &str) -> Result<Entry, JaasError> {
    let mut tokens = Tokens::new(text, false);
    let mut entries = Vec::new();
    while tokens.peek().is_some() {
        let at = format!("sasl.jaas.config: entry {}", entries.len() + 1);
        entries.push(entry(&mut tokens, &at)?);
    }
    match <[Entry; 1]>::try_from(entries) {
        Ok([entry]) => Ok(entry),
        Err(entries) => Err(JaasError(format!(
            "sasl.jaas.config has {} login modules; it must have exactly 1",
            entries.len()
        ))),
    }
}

/// The sections of a JAAS file, by name; a section given twice has the entries of both, as in
/// Java's `ConfigFile`. `file` names it in messages.
pub fn parse_file(file: &str, text: &str) -> Result<HashMap<String, Vec<Entry>>, JaasError> {
    let mut tokens = Tokens::new(text, true);
    let mut sections: HashMap<String, Vec<Entry>> = HashMap::new();
    while let Some(token) = tokens.next() {
        let line = tokens.line;
        let at = |what: &str| JaasError(format!("{file}: line {line}: {what}"));
        let Token::Word(name) = token else {
            return Err(at("a section name is expected"));
        };
        if tokens.next() != Some(Token::Char('{')) {
            let line = tokens.line;
            return Err(JaasError(format!(
                "{file}: line {line}: '{{' is expected after the section name"
            )));
        }
        let entries = sections.entry(name).or_default();
        loop {
            match tokens.peek() {
                Some(Token::Char('}')) => break,
                None => return Err(at("the section opened here is not closed with '};'")),
                Some(_) => {
                    let at = format!("{file}: line {}", tokens.peek_line());
                    entries.push(entry(&mut tokens, &at)?);
                }
            }
        }
        tokens.next();
        let line = tokens.line;
        if tokens.next() != Some(Token::Char(';')) {
            return Err(JaasError(format!(
                "{file}: line {line}: ';' is expected after the section's '}}'"
            )));
        }
    }
    Ok(sections)
}

/// One `module flag options;` entry; `at` says where, for messages.
fn entry(tokens: &mut Tokens<'_>, at: &str) -> Result<Entry, JaasError> {
    let fail = |what: &str| Err(JaasError(format!("{at}: {what}")));
    // As StreamTokenizer's `sval`, a quoted token serves where a word is expected.
    let Some(Token::Word(module) | Token::Quoted(module)) = tokens.next() else {
        return fail("a login module class is expected first");
    };
    let Some(Token::Word(flag) | Token::Quoted(flag)) = tokens.next() else {
        return fail("a control flag is expected after the login module class");
    };
    if !["required", "requisite", "sufficient", "optional"]
        .iter()
        .any(|known| flag.eq_ignore_ascii_case(known))
    {
        return fail("the control flag is not one of required, requisite, sufficient, optional");
    }
    let mut options = HashMap::new();
    let mut count = 0;
    loop {
        match tokens.next() {
            Some(Token::Char(';')) => break,
            None => return fail("';' is expected at its end"),
            Some(Token::Word(key) | Token::Quoted(key)) => {
                count += 1;
                match (tokens.next(), tokens.next()) {
                    (Some(Token::Char('=')), Some(Token::Word(value) | Token::Quoted(value))) => {
                        options.insert(key, value);
                    }
                    _ => {
                        return fail(&format!("option {count}: name=value is expected (a value with spaces or special characters must be quoted)"));
                    }
                }
            }
            Some(_) => {
                count += 1;
                return fail(&format!("option {count}: an option name is expected"));
            }
        }
    }
    Ok(Entry { module, options })
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Char(char),
}

/// `StreamTokenizer` as InlineJaas sets it up: words of the printable characters, `;` and `=`
/// (and, in files, `{` and `}`) alone, quotes, comments.
struct Tokens<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    braces: bool,
    /// The line of the last token taken (1-based).
    line: usize,
    /// The line where reading stands.
    reading: usize,
    peeked: Option<(Option<Token>, usize)>,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str, braces: bool) -> Tokens<'a> {
        Tokens {
            chars: text.chars().peekable(),
            braces,
            line: 1,
            reading: 1,
            peeked: None,
        }
    }

    fn peek(&mut self) -> Option<&Token> {
        if self.peeked.is_none() {
            let token = self.read();
            self.peeked = Some((token, self.reading));
        }
        self.peeked.as_ref().and_then(|(token, _)| token.as_ref())
    }

    fn peek_line(&mut self) -> usize {
        self.peek();
        self.peeked.as_ref().map_or(self.reading, |(_, line)| *line)
    }

    #[allow(clippy::should_implement_trait)]
    fn next(&mut self) -> Option<Token> {
        let (token, line) = match self.peeked.take() {
            Some(peeked) => peeked,
            None => {
                let token = self.read();
                (token, self.reading)
            }
        };
        self.line = line;
        token
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.reading += 1;
        }
        Some(c)
    }

    fn is_ordinary(&self, c: char) -> bool {
        c == ';' || c == '=' || (self.braces && (c == '{' || c == '}'))
    }

    fn read(&mut self) -> Option<Token> {
        loop {
            let c = *self.chars.peek()?;
            if c <= ' ' {
                self.bump();
                continue;
            }
            if c == '/' {
                self.bump();
                match self.chars.peek() {
                    Some('*') => {
                        self.bump();
                        let mut last = '\0';
                        while let Some(c) = self.bump() {
                            if last == '*' && c == '/' {
                                break;
                            }
                            last = c;
                        }
                    }
                    // `//`, and a lone `/` (StreamTokenizer's comment character): to the end
                    // of the line.
                    _ => {
                        while let Some(c) = self.chars.peek() {
                            if *c == '\n' || *c == '\r' {
                                break;
                            }
                            self.bump();
                        }
                    }
                }
                continue;
            }
            if c == '"' || c == '\'' {
                self.bump();
                return Some(Token::Quoted(self.quoted(c)));
            }
            if self.is_ordinary(c) || !is_word_char(c) {
                self.bump();
                return Some(Token::Char(c));
            }
            let mut word = String::new();
            while let Some(&c) = self.chars.peek() {
                if c <= ' '
                    || c == '/'
                    || c == '"'
                    || c == '\''
                    || self.is_ordinary(c)
                    || !is_word_char(c)
                {
                    break;
                }
                word.push(c);
                self.bump();
            }
            return Some(Token::Word(word));
        }
    }

    /// A quoted string's rest, after its opening `quote`: to the closing quote or the end of
    /// the line, with StreamTokenizer's escapes.
    fn quoted(&mut self, quote: char) -> String {
        let mut out = String::new();
        while let Some(&c) = self.chars.peek() {
            if c == '\n' || c == '\r' {
                break;
            }
            self.bump();
            if c == quote {
                break;
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(escaped) = self.bump() else {
                break;
            };
            match escaped {
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'v' => out.push('\u{b}'),
                '0'..='7' => {
                    // Up to three octal digits (the first at most 3 for three of them).
                    let mut value = escaped.to_digit(8).unwrap_or(0);
                    let mut digits = 1;
                    while let Some(d) = self.chars.peek().and_then(|c| c.to_digit(8)) {
                        if digits == 3 || (digits == 2 && escaped > '3') {
                            break;
                        }
                        value = value * 8 + d;
                        digits += 1;
                        self.bump();
                    }
                    out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
                }
                other => out.push(other),
            }
        }
        out
    }
}

/// InlineJaas's word characters: 32..=128 and 160..=255, and (StreamTokenizer) all above 255.
fn is_word_char(c: char) -> bool {
    let code = c as u32;
    (32..=128).contains(&code) || code >= 160
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_keytab_login_parses_as_kafka_users_write_it() {
        let entry = parse_inline(
            r#"com.sun.security.auth.module.Krb5LoginModule required
               useKeyTab=true storeKey=true keyTab="/etc/security/keytabs/spark.keytab"
               principal='spark/host@EXAMPLE.COM' serviceName=kafka;"#,
        )
        .unwrap();
        assert!(entry.is_kerberos());
        assert!(entry.flag("useKeyTab") && entry.flag("storeKey"));
        assert!(!entry.flag("useTicketCache"));
        assert_eq!(
            entry.option("keyTab"),
            Some("/etc/security/keytabs/spark.keytab")
        );
        assert_eq!(entry.option("principal"), Some("spark/host@EXAMPLE.COM"));
        assert_eq!(entry.option("serviceName"), Some("kafka"));
    }

    #[test]
    fn quotes_escapes_and_comments_follow_streamtokenizer() {
        let entry = parse_inline(
            "/* a comment */ x.Krb5LoginModule REQUIRED // to the end\n a=\"q\\\"x\\\\y\\tz\\101\" b='single' 'd'=\"unclosed\n c=True ;",
        )
        .unwrap();
        assert_eq!(entry.option("a"), Some("q\"x\\y\tzA"));
        assert_eq!(entry.module, "x.Krb5LoginModule");
        assert!(entry.flag("c"));
        assert_eq!(entry.option("b"), Some("single"));
        // A quoted name is a name; a quote ends at the end of its line.
        assert_eq!(entry.option("d"), Some("unclosed"));
        assert_eq!(entry.options.len(), 4, "{entry:?}");
    }

    #[test]
    fn bad_inline_texts_say_where_and_never_quote_a_token() {
        for (text, needle) in [
            ("", "has 0 login modules; it must have exactly 1"),
            (
                "a.B required; c.D required;",
                "has 2 login modules; it must have exactly 1",
            ),
            (
                "= required;",
                "entry 1: a login module class is expected first",
            ),
            ("a.B;", "entry 1: a control flag is expected"),
            ("a.B mandatory;", "entry 1: the control flag is not one of"),
            (
                "a.B required password=Secret-1 x;",
                "entry 1: option 2: name=value is expected",
            ),
            (
                "a.B required keyTab=/etc/Secret.keytab;",
                "entry 1: option 1: name=value is expected",
            ),
            (
                "a.B required a=\"Secret\"",
                "entry 1: ';' is expected at its end",
            ),
        ] {
            let message = parse_inline(text).unwrap_err().to_string();
            assert!(message.contains(needle), "{text}: {message}");
            assert!(!message.contains("Secret"), "{message}");
        }
    }

    #[test]
    fn a_file_has_sections_and_a_repeated_section_has_both_entries() {
        let sections = parse_file(
            "jaas.conf",
            r#"
// ZooKeeper's section
Client {
  com.sun.security.auth.module.Krb5LoginModule required
  useTicketCache=true ticketCache="/tmp/krb5cc_spark";
};
KafkaClient{com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true
  keyTab="spark.keytab" principal="spark@EXAMPLE.COM";};
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule optional username="u" password="p";
};
"#,
        )
        .unwrap();
        let client = &sections["Client"];
        assert_eq!(client.len(), 2);
        assert!(client[0].is_kerberos() && !client[1].is_kerberos());
        assert_eq!(client[0].option("ticketCache"), Some("/tmp/krb5cc_spark"));
        let kafka = &sections["KafkaClient"];
        assert_eq!(kafka[0].option("principal"), Some("spark@EXAMPLE.COM"));
    }

    #[test]
    fn bad_files_name_the_file_and_line() {
        for (text, needle) in [
            (
                "Client {\n a.B required x=\"Secret\";\n",
                "jaas.conf: line 1: the section opened here is not closed",
            ),
            (
                "Client {\n a.B required;\n}\n",
                "jaas.conf: line 3: ';' is expected after",
            ),
            (
                "Client\n a.B required;",
                "jaas.conf: line 2: '{' is expected",
            ),
            (
                "{ a.B required; };",
                "jaas.conf: line 1: a section name is expected",
            ),
            (
                "Client {\n\n a.B required Secret;\n};",
                "jaas.conf: line 3: option 1: name=value is expected",
            ),
        ] {
            let message = parse_file("jaas.conf", text).unwrap_err().to_string();
            assert!(message.contains(needle), "{text}: {message}");
            assert!(!message.contains("Secret"), "{message}");
        }
    }
}
