package io.offsetkeeper.e2e;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP forwarder on loopback to a real server (ZooKeeper), which a test cuts to stand for an
 * outage: {@link #cut()} closes every connection and the listening socket (connections are
 * refused), {@link #restore()} listens on the same port again.
 */
final class TcpProxy implements AutoCloseable {
    private final String targetHost;
    private final int targetPort;
    private final int port;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile ServerSocket server;
    // Guarded by this: a connection accepted as the cut begins is closed, not kept.
    private boolean isCut;
    private int accepted;
    private int closedByCut;

    /** Forwards to {@code target}, {@code host:port}. */
    TcpProxy(String target) throws IOException {
        int colon = target.lastIndexOf(':');
        targetHost = target.substring(0, colon);
        targetPort = Integer.parseInt(target.substring(colon + 1));
        server = listen(0);
        port = server.getLocalPort();
        accept(server);
    }

    /** The address clients connect to, {@code 127.0.0.1:<port>}. */
    String address() {
        return "127.0.0.1:" + port;
    }

    synchronized void cut() throws IOException {
        isCut = true;
        server.close();
        for (Socket s : sockets) {
            s.close();
            closedByCut++;
        }
        sockets.clear();
    }

    synchronized void restore() throws IOException {
        isCut = false;
        server = listen(port);
        accept(server);
    }

    /** Connections accepted and closed by cuts so far, for failure messages. */
    @Override
    public synchronized String toString() {
        return "TcpProxy{" + address() + " to " + targetHost + ":" + targetPort + ", " + accepted
                + " connections accepted, " + closedByCut + " sockets closed by cuts" + (isCut ? ", cut" : "") + "}";
    }

    private static ServerSocket listen(int port) throws IOException {
        ServerSocket s = new ServerSocket();
        s.setReuseAddress(true);
        s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        return s;
    }

    private void accept(ServerSocket listening) {
        daemon(() -> {
            while (!listening.isClosed()) {
                try {
                    Socket client = listening.accept();
                    Socket upstream = new Socket(targetHost, targetPort);
                    synchronized (this) {
                        if (isCut) {
                            client.close();
                            upstream.close();
                            continue;
                        }
                        accepted++;
                        sockets.add(client);
                        sockets.add(upstream);
                    }
                    daemon(() -> pump(client, upstream));
                    daemon(() -> pump(upstream, client));
                } catch (IOException e) {
                    return; // closed by cut() or close()
                }
            }
        });
    }

    private static void pump(Socket from, Socket to) {
        byte[] buffer = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buffer)) >= 0) {
                out.write(buffer, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // one side closed: close both below
        } finally {
            try {
                from.close();
                to.close();
            } catch (IOException ignored) {
                // already closed
            }
        }
    }

    private static void daemon(Runnable body) {
        Thread t = new Thread(body, "tcp-proxy");
        t.setDaemon(true);
        t.start();
    }

    @Override
    public void close() throws IOException {
        cut();
    }
}
