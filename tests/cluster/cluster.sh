#!/usr/bin/env bash
# A real ZooKeeper 3.8 + Kafka 3.9 (ZooKeeper mode) test cluster on 127.0.0.1: two plain
# `java` processes launched from a resolved classpath file, all state under one DIR.
#
#   cluster.sh start DIR         fresh cluster: new free ports, empty data, writes DIR/cluster.env
#   cluster.sh stop DIR          stop Kafka, then ZooKeeper (data is kept), then a KDC (whose keys
#                                live in memory: a Kerberos cluster comes back by start-kerberos)
#   cluster.sh status DIR        print which servers run
#   cluster.sh stop-kafka|start-kafka|stop-zk|start-zk DIR
#                                one server only, same ports and data (for fault tests)
#   cluster.sh start-secure DIR  fresh secured cluster: ZooKeeper requires SASL (DIGEST-MD5) on
#                                every session and has a TLS client port; Kafka has SASL_SSL and
#                                SASL_PLAINTEXT listeners (PLAIN, SCRAM-SHA-256/512) and an SSL one
#                                that requires a client certificate, besides its PLAINTEXT one.
#                                Certificates come from openssl (a CA and a 127.0.0.1 server
#                                certificate, PEM) and keytool (a JKS truststore, PKCS#12 and JKS
#                                client keystores);
#                                users, passwords and paths go to DIR/secure.env
#   cluster.sh start-kerberos DIR
#                                fresh Kerberos cluster: a KDC (Apache Kerby, KdcMain.java beside
#                                this script; realm EXAMPLE.COM, TCP on loopback), a ZooKeeper that
#                                requires SASL GSSAPI on every session, and Kafka with a
#                                SASL_PLAINTEXT GSSAPI listener besides its PLAINTEXT one (which
#                                the broker uses itself; it logs in to ZooKeeper with Kerberos).
#                                Keytabs, krb5.conf, a client ticket cache and a client JAAS file
#                                go to DIR/kerberos, their paths and the addresses to
#                                DIR/kerberos.env
#   cluster.sh check-kerberos DIR
#                                proves that the Kerberos cluster requires Kerberos and takes the
#                                client's (KerberosCheck.java beside this script)
#   cluster.sh kinit DIR         a fresh TGT of the client in its ticket cache (tickets expire:
#                                see OFFSETKEEPER_KERBEROS_TICKET_LIFETIME); no MIT tools needed
#
# Env: OFFSETKEEPER_CLUSTER_CLASSPATH  file holding a ':'-separated classpath
#                                      (default <repo>/build/cluster/classpath.txt)
#      OFFSETKEEPER_ZK_CLASSPATH       classpath file for ZooKeeper only (default: the one above)
#      OFFSETKEEPER_KAFKA_CLASSPATH    classpath file for Kafka only (default: the one above);
#                                      the compatibility matrix mixes versions (tests/compat)
#      OFFSETKEEPER_KDC_CLASSPATH      classpath file of the Kerberos cluster's KDC: Kerby's jars
#                                      (default <repo>/build/cluster/kdc-classpath.txt)
#      OFFSETKEEPER_KERBEROS_TICKET_LIFETIME
#                                      the longest life of a ticket from that KDC, in seconds
#                                      (default 14400, 4 hours); re-login tests want about 120
#      OFFSETKEEPER_CLUSTER_TIMEOUT    seconds to wait for a server to come up (default 90)
#      OFFSETKEEPER_CLUSTER_BROKERS    Kafka brokers of `start` (default 1); broker i > 0 runs
#                                      as role kafka<i> under DIR/kafka<i>. One process holds
#                                      one file descriptor per partition, so a cluster past the
#                                      fd limit's worth of partitions needs more than one.
#      OFFSETKEEPER_ZK_HEAP, OFFSETKEEPER_KAFKA_HEAP   -Xmx of ZooKeeper (default 1g) and of
#                                      each broker (default 512m)
#      JAVA_HOME                       JVM to use (default: java on PATH)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF=cluster.sh
# shellcheck source=tests/cluster/lib.sh
. "$HERE/lib.sh"
ROOT=$(cd "$HERE/../.." && pwd)
CLASSPATH_FILE=${OFFSETKEEPER_CLUSTER_CLASSPATH:-$ROOT/build/cluster/classpath.txt}
ZK_CLASSPATH_FILE=${OFFSETKEEPER_ZK_CLASSPATH:-$CLASSPATH_FILE}
KAFKA_CLASSPATH_FILE=${OFFSETKEEPER_KAFKA_CLASSPATH:-$CLASSPATH_FILE}
KDC_CLASSPATH_FILE=${OFFSETKEEPER_KDC_CLASSPATH:-$ROOT/build/cluster/kdc-classpath.txt}
TICKET_LIFETIME=${OFFSETKEEPER_KERBEROS_TICKET_LIFETIME:-14400}
TIMEOUT=${OFFSETKEEPER_CLUSTER_TIMEOUT:-90}
STOP_TIMEOUT=30
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
BROKER_ID=0
BROKERS=${OFFSETKEEPER_CLUSTER_BROKERS:-1}
[[ "$BROKERS" =~ ^[1-9][0-9]*$ ]] || die "OFFSETKEEPER_CLUSTER_BROKERS is '$BROKERS'; allowed: a whole number of at least 1"
ZK_HEAP=${OFFSETKEEPER_ZK_HEAP:-1g}
KAFKA_HEAP=${OFFSETKEEPER_KAFKA_HEAP:-512m}

[ $# -eq 2 ] || die "usage: cluster.sh start|start-secure|start-kerberos|check-kerberos|kinit|stop|status|start-kafka|stop-kafka|start-zk|stop-zk DIR"
CMD=$1
[[ "$CMD" != start* ]] || mkdir -p "$2"
if [ ! -d "$2" ]; then
  [ "$CMD" != stop ] || exit 0 # nothing was ever started there
  die "no cluster directory $2"
fi
DIR=$(cd "$2" && pwd)
command -v python3 >/dev/null || die "python3 is needed for the port and readiness probes"
PORTS_FILE=$DIR/ports.env
PORTS_MISSING="no cluster configured in $DIR; run 'cluster.sh start $DIR' first"

# read_classpath [FILE]: CP from FILE (default: Kafka's); both files are checked without one.
read_classpath() {
  local f
  for f in "${1:-$ZK_CLASSPATH_FILE}" "${1:-$KAFKA_CLASSPATH_FILE}"; do
    read_classpath_file "$f" clusterClasspath
  done
}

# launch ROLE HEAP MAIN ARGS...: starts server ROLE (see spawn) and its DEADLINE for wait_for.
launch() {
  local role=$1 heap=$2
  shift 2
  local extra=()
  # A secured cluster's JAAS and connection settings, kept for restarts.
  [ ! -f "$DIR/$role.jvmflags" ] || mapfile -t extra <"$DIR/$role.jvmflags"
  spawn "$role" -Xms64m "-Xmx$heap" -XX:+UseG1GC -Djava.awt.headless=true "${extra[@]}" \
    "-Dlog4j.configuration=file:$HERE/log4j.properties" \
    "-Doffsetkeeper.log.file=$DIR/logs/$role.log" \
    -cp "$CP" "$@"
  STARTED+=("$role")
  DEADLINE=$((SECONDS + TIMEOUT))
}

# wait_for ROLE WHAT PROBE-ARGS...: poll until the probe passes or $DEADLINE (one budget
# per server start); fail early if the JVM died.
wait_for() {
  local role=$1 what=$2
  shift 2
  until probe "$@"; do
    if ! pid_of "$role" >/dev/null; then
      tail_logs "$role"
      die "$role exited before $what"
    fi
    if [ "$SECONDS" -ge "$DEADLINE" ]; then
      tail_logs "$role"
      die "$role: no $what after ${TIMEOUT}s"
    fi
    sleep 0.5
  done
}

stop_role() {
  local role=$1 pid i
  if ! pid=$(pid_of "$role"); then
    rm -f "$DIR/$role.pid"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$role (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$DIR/$role.pid"
  log "stopped $role"
}

start_zk() {
  load_ports
  ! pid_of zk >/dev/null || die "ZooKeeper of $DIR is already running"
  read_classpath "$ZK_CLASSPATH_FILE"
  launch zk "$ZK_HEAP" -Dzookeeper.jmx.log4j.disable=true \
    org.apache.zookeeper.server.ZooKeeperServerMain "$DIR/zk/zoo.cfg"
  wait_for zk "ruok answer on 127.0.0.1:$ZK_PORT" zk-ok "127.0.0.1:$ZK_PORT"
  log "ZooKeeper up on 127.0.0.1:$ZK_PORT"
}

start_kafka() {
  load_ports
  ! pid_of kafka >/dev/null || die "Kafka of $DIR is already running"
  probe zk-ok "127.0.0.1:$ZK_PORT" || die "ZooKeeper of $DIR is not answering; start it first"
  read_classpath "$KAFKA_CLASSPATH_FILE"
  # A broker stopped while ZooKeeper was down could not close its session, so its
  # /brokers/ids entry lingers until the session expires, and Kafka refuses to start.
  DEADLINE=$((SECONDS + TIMEOUT))
  if probe zk-ephemeral "127.0.0.1:$ZK_PORT" "/brokers/ids/$BROKER_ID"; then
    log "waiting for the previous broker's ZooKeeper session to expire"
    while probe zk-ephemeral "127.0.0.1:$ZK_PORT" "/brokers/ids/$BROKER_ID"; do
      [ "$SECONDS" -lt "$DEADLINE" ] || die "stale /brokers/ids/$BROKER_ID did not expire in ${TIMEOUT}s"
      sleep 0.5
    done
  fi
  launch kafka "$KAFKA_HEAP" kafka.Kafka "$DIR/kafka/server.properties"
  wait_for kafka "registration /brokers/ids/$BROKER_ID" \
    zk-ephemeral "127.0.0.1:$ZK_PORT" "/brokers/ids/$BROKER_ID"
  wait_for kafka "metadata answer on 127.0.0.1:$KAFKA_PORT" \
    kafka-ready "127.0.0.1:$KAFKA_PORT" "$BROKER_ID"
  log "Kafka up on 127.0.0.1:$KAFKA_PORT"
}

# Brokers 1..BROKERS-1 of `start`: broker 0's configuration with their own id, port and data.
start_extra_brokers() {
  local i port ports
  ((BROKERS > 1)) || return 0
  ports=$(probe free-ports $((BROKERS - 1))) || die "could not find free loopback ports"
  i=1
  for port in $ports; do
    mkdir -p "$DIR/kafka$i/data"
    sed -e "s|^broker.id=.*|broker.id=$i|" \
      -e "s|^listeners=.*|listeners=PLAINTEXT://127.0.0.1:$port|" \
      -e "s|^log.dirs=.*|log.dirs=$DIR/kafka$i/data|" \
      "$DIR/kafka/server.properties" >"$DIR/kafka$i/server.properties"
    echo "KAFKA${i}_PORT=$port" >>"$DIR/ports.env"
    launch "kafka$i" "$KAFKA_HEAP" kafka.Kafka "$DIR/kafka$i/server.properties"
    wait_for "kafka$i" "broker $i in the metadata of 127.0.0.1:$port" \
      kafka-brokers "127.0.0.1:$port" $((i + 1)) "$i"
    log "Kafka broker $i up on 127.0.0.1:$port"
    i=$((i + 1))
  done
}

# The running servers' roles, brokers first (in the order to stop them); the KDC last, and only
# where there is one.
roles() {
  local f
  for f in "$DIR"/kafka[0-9]*.pid; do
    [ -e "$f" ] && basename "$f" .pid
  done
  echo kafka
  echo zk
  if [ -e "$DIR/kdc.pid" ] || [ -d "$DIR/kerberos" ]; then echo kdc; fi
}

# Fresh ports, configs and empty data dirs; DIR's other files (classpath.txt) are left alone.
configure() {
  local ports
  rm -rf "$DIR/zk" "$DIR/kafka" "$DIR"/kafka[0-9]* "$DIR/logs" "$DIR/cluster.env" "$DIR/ports.env" \
    "$DIR/secure" "$DIR/secure.env" "$DIR/zk.jvmflags" "$DIR/kafka.jvmflags" \
    "$DIR/kerberos" "$DIR/kerberos.env"
  mkdir -p "$DIR/zk/data" "$DIR/kafka/data" "$DIR/logs"
  ports=$(probe free-ports 2) || die "could not find free loopback ports"
  ZK_PORT=${ports% *} KAFKA_PORT=${ports#* }
  printf 'ZK_PORT=%s\nKAFKA_PORT=%s\n' "$ZK_PORT" "$KAFKA_PORT" >"$DIR/ports.env"
  cat >"$DIR/zk/zoo.cfg" <<EOF
tickTime=2000
dataDir=$DIR/zk/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
EOF
  cat >"$DIR/kafka/server.properties" <<EOF
broker.id=$BROKER_ID
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
zookeeper.connect=127.0.0.1:$ZK_PORT
# 6 s instead of 18 s: after a broker dies without closing its session, the restart
# waits for that session to expire (the server allows 2..20 ticks of 2 s).
zookeeper.session.timeout.ms=6000
log.dirs=$DIR/kafka/data
num.partitions=1
auto.create.topics.enable=false
delete.topic.enable=true
offsets.topic.replication.factor=1
# One partition instead of 50: the group coordinator comes up in well under a second.
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
# Retention tests should not wait minutes for the cleaner thread.
log.initial.task.delay.ms=0
log.retention.check.interval.ms=1000
# A lone broker has no one to hand leadership to, and controlled shutdown
# would block the stop while ZooKeeper is down in fault tests.
controlled.shutdown.enable=false
EOF
}

# The test users; these passwords guard nothing but a throwaway loopback cluster.
ZK_USER=offsetkeeper ZK_PASSWORD=zk-Secret-4711
KAFKA_USER=alice KAFKA_PASSWORD=kafka-Secret-0815

# write_certificates DIR: a test CA, a server certificate for localhost (its key usage allows
# clientAuth too), a JKS truststore with the CA, and the client identity as Java shops keep it.
write_certificates() {
  local s=$1
  mkdir -p "$s"
  command -v openssl >/dev/null || die "openssl is needed for the test certificates"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=offsetkeeper test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$s/ca.key" -out "$s/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$s/server.key" -out "$s/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n' >"$s/server.ext"
  openssl x509 -req -in "$s/server.csr" -CA "$s/ca.pem" -CAkey "$s/ca.key" -CAcreateserial \
    -days 2 -extfile "$s/server.ext" -out "$s/server.pem" 2>/dev/null
  cat "$s/server.key" "$s/server.pem" >"$s/server-keystore.pem"
  "${JAVA%java}keytool" -importcert -noprompt -alias ca -file "$s/ca.pem" \
    -keystore "$s/truststore.jks" -storepass changeit -storetype JKS >/dev/null 2>&1 ||
    die "keytool could not write $s/truststore.jks"
  # The client identity as Java shops keep it: PKCS#12 (openssl's default encryption), and JKS
  # with a key password of its own (ssl.key.password).
  openssl pkcs12 -export -in "$s/server.pem" -inkey "$s/server.key" -certfile "$s/ca.pem" \
    -name client -out "$s/client.p12" -passout pass:p12-store-pw 2>/dev/null ||
    die "openssl could not write $s/client.p12"
  "${JAVA%java}keytool" -importkeystore -noprompt -srckeystore "$s/client.p12" -srcstoretype PKCS12 \
    -srcstorepass p12-store-pw -srcalias client -destkeystore "$s/client.jks" -deststoretype JKS \
    -deststorepass jks-store-pw -destkeypass jks-key-pw >/dev/null 2>&1 ||
    die "keytool could not write $s/client.jks"
}

# Certificates, JAAS files and the secured parts of both configs (after configure).
configure_secure() {
  local ports s=$DIR/secure
  ports=$(probe free-ports 4) || die "could not find free loopback ports"
  read -r ZK_TLS_PORT KAFKA_SASL_SSL_PORT KAFKA_SSL_PORT KAFKA_SASL_PLAINTEXT_PORT <<<"$ports"
  printf '%s\n' "ZK_TLS_PORT=$ZK_TLS_PORT" "KAFKA_SASL_SSL_PORT=$KAFKA_SASL_SSL_PORT" \
    "KAFKA_SSL_PORT=$KAFKA_SSL_PORT" "KAFKA_SASL_PLAINTEXT_PORT=$KAFKA_SASL_PLAINTEXT_PORT" >>"$DIR/ports.env"
  write_certificates "$s"
  printf '%s\n' 'Server {' '  org.apache.zookeeper.server.auth.DigestLoginModule required' \
    "  user_$ZK_USER=\"$ZK_PASSWORD\"" '  user_kafka="kafka-broker-pw";' '};' >"$s/zk-jaas.conf"
  printf '%s\n' 'Client {' '  org.apache.zookeeper.server.auth.DigestLoginModule required' \
    '  username="kafka"' '  password="kafka-broker-pw";' '};' >"$s/kafka-jaas.conf"
  {
    echo "secureClientPort=$ZK_TLS_PORT"
    echo "ssl.keyStore.location=$s/server-keystore.pem"
    echo "ssl.keyStore.type=PEM"
    echo "ssl.trustStore.location=$s/ca.pem"
    echo "ssl.trustStore.type=PEM"
    echo "ssl.clientAuth=none"
    echo "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
    echo "sessionRequireClientSASLAuth=true"
  } >>"$DIR/zk/zoo.cfg"
  printf '%s\n' "-Djava.security.auth.login.config=$s/zk-jaas.conf" \
    -Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory >"$DIR/zk.jvmflags"
  printf '%s\n' "-Djava.security.auth.login.config=$s/kafka-jaas.conf" >"$DIR/kafka.jvmflags"
  # SASL_SSL; SSL requiring a client certificate (the server's own, whose key usage allows
  # clientAuth); SASL_PLAINTEXT.
  sed -i "s|^listeners=.*|listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_SSL_PORT,SSL://127.0.0.1:$KAFKA_SSL_PORT,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PLAINTEXT_PORT|" \
    "$DIR/kafka/server.properties"
  {
    echo "inter.broker.listener.name=PLAINTEXT"
    echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    echo "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$KAFKA_USER=\"$KAFKA_PASSWORD\";"
    echo "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
    echo "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
    echo "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$KAFKA_USER=\"$KAFKA_PASSWORD\";"
    echo "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
    echo "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
    echo "ssl.keystore.type=PEM"
    echo "ssl.keystore.location=$s/server-keystore.pem"
    echo "ssl.truststore.type=PEM"
    echo "ssl.truststore.location=$s/ca.pem"
    echo "ssl.client.auth=none"
    echo "listener.name.ssl.ssl.client.auth=required"
  } >>"$DIR/kafka/server.properties"
}

# SCRAM credentials live in ZooKeeper: written before the broker starts.
add_scram_user() {
  "$JAVA" "-Djava.security.auth.login.config=$DIR/secure/kafka-jaas.conf" \
    "-Dlog4j.configuration=file:$HERE/log4j.properties" "-Doffsetkeeper.log.file=$DIR/logs/scram.log" \
    -cp "$CP" kafka.admin.ConfigCommand --zookeeper "127.0.0.1:$ZK_PORT" --alter \
    --add-config "SCRAM-SHA-256=[iterations=4096,password=$KAFKA_PASSWORD],SCRAM-SHA-512=[password=$KAFKA_PASSWORD]" \
    --entity-type users --entity-name "$KAFKA_USER" >>"$DIR/logs/scram.out" 2>&1 ||
    { tail_logs scram; die "could not add the SCRAM user $KAFKA_USER"; }
}

# secure.env: where the secured servers listen and the test credentials.
write_secure_env() {
  {
    echo "OFFSETKEEPER_SECURE_ZK=127.0.0.1:$ZK_PORT"
    echo "OFFSETKEEPER_SECURE_ZK_TLS=127.0.0.1:$ZK_TLS_PORT"
    echo "OFFSETKEEPER_SECURE_ZK_USER=$ZK_USER"
    echo "OFFSETKEEPER_SECURE_ZK_PASSWORD=$ZK_PASSWORD"
    echo "OFFSETKEEPER_SECURE_KAFKA_PLAINTEXT=127.0.0.1:$KAFKA_PORT"
    echo "OFFSETKEEPER_SECURE_KAFKA_SASL_SSL=127.0.0.1:$KAFKA_SASL_SSL_PORT"
    echo "OFFSETKEEPER_SECURE_KAFKA_SSL_CLIENT_AUTH=127.0.0.1:$KAFKA_SSL_PORT"
    echo "OFFSETKEEPER_SECURE_KAFKA_SASL_PLAINTEXT=127.0.0.1:$KAFKA_SASL_PLAINTEXT_PORT"
    echo "OFFSETKEEPER_SECURE_CLIENT_KEYSTORE=$DIR/secure/server-keystore.pem"
    echo "OFFSETKEEPER_SECURE_KAFKA_USER=$KAFKA_USER"
    echo "OFFSETKEEPER_SECURE_KAFKA_PASSWORD=$KAFKA_PASSWORD"
    echo "OFFSETKEEPER_SECURE_CA=$DIR/secure/ca.pem"
    echo "OFFSETKEEPER_SECURE_JKS=$DIR/secure/truststore.jks"
    echo "OFFSETKEEPER_SECURE_JKS_PASSWORD=changeit"
    echo "OFFSETKEEPER_SECURE_CLIENT_P12=$DIR/secure/client.p12"
    echo "OFFSETKEEPER_SECURE_CLIENT_P12_PASSWORD=p12-store-pw"
    echo "OFFSETKEEPER_SECURE_CLIENT_JKS=$DIR/secure/client.jks"
    echo "OFFSETKEEPER_SECURE_CLIENT_JKS_PASSWORD=jks-store-pw"
    echo "OFFSETKEEPER_SECURE_CLIENT_JKS_KEY_PASSWORD=jks-key-pw"
    echo "OFFSETKEEPER_SECURE_CLIENT_KEY=$DIR/secure/server.key"
    echo "OFFSETKEEPER_SECURE_CLIENT_CERT=$DIR/secure/server.pem"
  } >"$DIR/secure.env.tmp"
  mv "$DIR/secure.env.tmp" "$DIR/secure.env"
}

# The Kerberos cluster: one realm and the KDC's principals (KdcMain.java makes them, with one
# keytab each: DIR/kerberos/<name before the slash>.keytab).
REALM=EXAMPLE.COM
ZK_PRINCIPAL=zookeeper/localhost@$REALM
KAFKA_PRINCIPAL=kafka/localhost@$REALM
CLIENT_PRINCIPAL=offsetkeeper@$REALM
OTHER_PRINCIPAL=other@$REALM

# jaas_keytab SECTION PRINCIPAL: a JAAS section logging PRINCIPAL in from its keytab. Shown in
# docs/security.md (Kerberos), checked by tests/readme/readme_check.py.
# README: begin kerberos-jaas
jaas_keytab() {
  printf '%s\n' "$1 {" '  com.sun.security.auth.module.Krb5LoginModule required' \
    '  useKeyTab=true storeKey=true useTicketCache=false' \
    "  keyTab=\"$DIR/kerberos/${2%%[/@]*}.keytab\"" "  principal=\"$2\";" '};'
}
# README: end kerberos-jaas

# JAAS files, krb5.conf flags and the Kerberos parts of both configs (after configure). The
# servers' principals have the host localhost: ZooKeeper is reached as localhost:PORT and the
# broker advertises its SASL listener as localhost:PORT (both listen on 127.0.0.1), so a client
# derives zookeeper/localhost and kafka/localhost without a reverse lookup.
configure_kerberos() {
  local ports k=$DIR/kerberos
  [[ "$TICKET_LIFETIME" =~ ^[1-9][0-9]*$ ]] ||
    die "OFFSETKEEPER_KERBEROS_TICKET_LIFETIME is '$TICKET_LIFETIME'; allowed: a whole number of seconds"
  ports=$(probe free-ports 3) || die "could not find free loopback ports"
  read -r KDC_PORT KAFKA_SASL_PLAINTEXT_PORT KAFKA_SASL_SSL_PORT <<<"$ports"
  printf '%s\n' "KDC_PORT=$KDC_PORT" "KAFKA_SASL_PLAINTEXT_PORT=$KAFKA_SASL_PLAINTEXT_PORT" \
    "KAFKA_SASL_SSL_PORT=$KAFKA_SASL_SSL_PORT" >>"$DIR/ports.env"
  mkdir -p "$k"
  write_certificates "$k/tls" # SASL_SSL: GSSAPI inside TLS, the truststore a JKS as on CDH/HDP
  jaas_keytab Server "$ZK_PRINCIPAL" >"$k/zk-jaas.conf"
  jaas_keytab Client "$KAFKA_PRINCIPAL" >"$k/kafka-jaas.conf" # the broker's own ZooKeeper login
  # OtherClient: a second identity, for a keeper named to it with zookeeper.sasl.clientconfig.
  { jaas_keytab Client "$CLIENT_PRINCIPAL"; jaas_keytab KafkaClient "$CLIENT_PRINCIPAL"
    jaas_keytab OtherClient "$OTHER_PRINCIPAL"; } >"$k/client-jaas.conf"
  {
    echo "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
    echo "sessionRequireClientSASLAuth=true"
    # Identities as ACLs name them: sasl:offsetkeeper, sasl:kafka (no host, no realm).
    echo "kerberos.removeHostFromPrincipal=true"
    echo "kerberos.removeRealmFromPrincipal=true"
  } >>"$DIR/zk/zoo.cfg"
  printf '%s\n' "-Djava.security.auth.login.config=$k/zk-jaas.conf" "-Djava.security.krb5.conf=$k/krb5.conf" >"$DIR/zk.jvmflags"
  printf '%s\n' "-Djava.security.auth.login.config=$k/kafka-jaas.conf" "-Djava.security.krb5.conf=$k/krb5.conf" >"$DIR/kafka.jvmflags"
  sed -i -e "s|^listeners=.*|listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PLAINTEXT_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_SSL_PORT|" \
    -e "s|^zookeeper.connect=.*|zookeeper.connect=localhost:$ZK_PORT|" "$DIR/kafka/server.properties"
  {
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_PLAINTEXT://localhost:$KAFKA_SASL_PLAINTEXT_PORT,SASL_SSL://localhost:$KAFKA_SASL_SSL_PORT"
    echo "inter.broker.listener.name=PLAINTEXT"
    echo "sasl.enabled.mechanisms=GSSAPI"
    echo "sasl.kerberos.service.name=kafka"
    local listener
    for listener in sasl_plaintext sasl_ssl; do
      echo "listener.name.$listener.gssapi.sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true useTicketCache=false keyTab=\"$k/kafka.keytab\" principal=\"$KAFKA_PRINCIPAL\";"
    done
    echo "ssl.keystore.type=PEM"
    echo "ssl.keystore.location=$k/tls/server-keystore.pem"
    echo "ssl.client.auth=none"
  } >>"$DIR/kafka/server.properties"
}

# The KDC; keytabs, krb5.conf and the client's ticket cache are in place once it is ready.
start_kdc() {
  load_ports
  ! pid_of kdc >/dev/null || die "KDC of $DIR is already running"
  read_classpath_file "$KDC_CLASSPATH_FILE" kdcClasspath
  rm -f "$DIR/kerberos/kdc.ready"
  launch kdc 256m "$HERE/KdcMain.java" serve "$DIR/kerberos" "$KDC_PORT" "$TICKET_LIFETIME"
  wait_for kdc "keytabs and an answer on 127.0.0.1:$KDC_PORT" \
    kdc-ready "127.0.0.1:$KDC_PORT" "$DIR/kerberos/kdc.ready"
  log "KDC up on 127.0.0.1:$KDC_PORT (realm $REALM, tickets live ${TICKET_LIFETIME}s)"
}

# kerberos.env: where the Kerberos cluster listens, its realm and the client credentials.
write_kerberos_env() {
  local k=$DIR/kerberos
  {
    echo "OFFSETKEEPER_KERBEROS_ZK=localhost:$ZK_PORT"
    echo "OFFSETKEEPER_KERBEROS_KAFKA_SASL_PLAINTEXT=localhost:$KAFKA_SASL_PLAINTEXT_PORT"
    echo "OFFSETKEEPER_KERBEROS_KAFKA_SASL_SSL=localhost:$KAFKA_SASL_SSL_PORT"
    echo "OFFSETKEEPER_KERBEROS_KAFKA_PLAINTEXT=127.0.0.1:$KAFKA_PORT"
    echo "OFFSETKEEPER_KERBEROS_TRUSTSTORE_JKS=$k/tls/truststore.jks"
    echo "OFFSETKEEPER_KERBEROS_TRUSTSTORE_PASSWORD=changeit"
    echo "OFFSETKEEPER_KERBEROS_CA=$k/tls/ca.pem"
    echo "OFFSETKEEPER_KERBEROS_REALM=$REALM"
    echo "OFFSETKEEPER_KERBEROS_KRB5_CONF=$k/krb5.conf"
    echo "OFFSETKEEPER_KERBEROS_KDC=127.0.0.1:$KDC_PORT"
    echo "OFFSETKEEPER_KERBEROS_TICKET_LIFETIME=$TICKET_LIFETIME"
    echo "OFFSETKEEPER_KERBEROS_ZK_PRINCIPAL=$ZK_PRINCIPAL"
    echo "OFFSETKEEPER_KERBEROS_KAFKA_PRINCIPAL=$KAFKA_PRINCIPAL"
    echo "OFFSETKEEPER_KERBEROS_CLIENT_PRINCIPAL=$CLIENT_PRINCIPAL"
    echo "OFFSETKEEPER_KERBEROS_CLIENT_KEYTAB=$k/offsetkeeper.keytab"
    echo "OFFSETKEEPER_KERBEROS_CLIENT_CCACHE=$k/offsetkeeper.ccache"
    echo "OFFSETKEEPER_KERBEROS_CLIENT_JAAS=$k/client-jaas.conf"
    echo "OFFSETKEEPER_KERBEROS_OTHER_PRINCIPAL=$OTHER_PRINCIPAL"
    echo "OFFSETKEEPER_KERBEROS_OTHER_KEYTAB=$k/other.keytab"
  } >"$DIR/kerberos.env.tmp"
  mv "$DIR/kerberos.env.tmp" "$DIR/kerberos.env"
}

kerberos_env() {
  [ -f "$DIR/kerberos.env" ] || die "no Kerberos cluster in $DIR; run 'cluster.sh start-kerberos $DIR' first"
  # shellcheck source=/dev/null
  . "$DIR/kerberos.env"
}

# check-kerberos: KerberosCheck.java with the client JAAS file and krb5.conf, as a test JVM has them.
check_kerberos() {
  kerberos_env
  read_classpath "$KAFKA_CLASSPATH_FILE"
  "$JAVA" "-Djava.security.krb5.conf=$OFFSETKEEPER_KERBEROS_KRB5_CONF" \
    "-Djava.security.auth.login.config=$OFFSETKEEPER_KERBEROS_CLIENT_JAAS" \
    "-Dlog4j.configuration=file:$HERE/log4j.properties" "-Doffsetkeeper.log.file=$DIR/logs/check-kerberos.log" \
    -cp "$CP" "$HERE/KerberosCheck.java" "$DIR/kerberos.env" ||
    { tail_logs check-kerberos; die "the Kerberos cluster of $DIR failed its check"; }
}

# kinit: the client's ticket cache afresh from its keytab, by Kerby's client (MIT's kinit is not
# installed here).
kinit_client() {
  kerberos_env
  read_classpath_file "$KDC_CLASSPATH_FILE" kdcClasspath
  "$JAVA" "-Dlog4j.configuration=file:$HERE/log4j.properties" "-Doffsetkeeper.log.file=$DIR/logs/kinit.log" \
    -cp "$CP" "$HERE/KdcMain.java" kinit "${OFFSETKEEPER_KERBEROS_KDC##*:}" \
    "$OFFSETKEEPER_KERBEROS_CLIENT_PRINCIPAL" "$OFFSETKEEPER_KERBEROS_CLIENT_KEYTAB" "$OFFSETKEEPER_KERBEROS_CLIENT_CCACHE" ||
    { tail_logs kinit; die "kinit of $OFFSETKEEPER_KERBEROS_CLIENT_PRINCIPAL failed"; }
}

# A failed start must not leave half a cluster behind (Gradle then never runs clusterStop).
STARTED=()
cleanup() {
  local r
  for r in $(roles); do
    [[ " ${STARTED[*]} " != *" $r "* ]] || stop_role "$r"
  done
}
trap 'rc=$?; [ $rc -eq 0 ] || cleanup' EXIT

case $CMD in
  start)
    if pid_of kafka >/dev/null || pid_of zk >/dev/null || pid_of kdc >/dev/null; then
      log "a cluster is still running from $DIR; restarting it fresh"
      for r in $(roles); do stop_role "$r"; done
    fi
    read_classpath
    configure
    start_zk
    start_kafka
    start_extra_brokers
    printf 'OFFSETKEEPER_ZK=127.0.0.1:%s\nOFFSETKEEPER_BOOTSTRAP=127.0.0.1:%s\n' \
      "$ZK_PORT" "$KAFKA_PORT" >"$DIR/cluster.env.tmp"
    mv "$DIR/cluster.env.tmp" "$DIR/cluster.env"
    log "cluster ready; env in $DIR/cluster.env"
    ;;
  start-secure)
    for r in $(roles); do stop_role "$r"; done
    read_classpath
    configure
    configure_secure
    start_zk
    read_classpath "$KAFKA_CLASSPATH_FILE"
    add_scram_user
    start_kafka
    write_secure_env
    log "secured cluster ready; env in $DIR/secure.env"
    ;;
  start-kerberos)
    for r in $(roles); do stop_role "$r"; done
    read_classpath
    configure
    configure_kerberos
    start_kdc
    start_zk
    start_kafka
    write_kerberos_env
    log "Kerberos cluster ready; env in $DIR/kerberos.env"
    ;;
  check-kerberos) check_kerberos ;;
  kinit) kinit_client ;;
  stop)
    for r in $(roles); do stop_role "$r"; done
    ;;
  status)
    for r in $(roles); do
      if p=$(pid_of "$r"); then echo "$r running (pid $p)"; else echo "$r stopped"; fi
    done
    ;;
  start-zk) start_zk ;;
  start-kafka) start_kafka ;;
  stop-zk) stop_role zk ;;
  stop-kafka) stop_role kafka ;;
  *) die "unknown command '$CMD'" ;;
esac
