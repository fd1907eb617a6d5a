package dev.prme;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;

/**
 * Runs a single OpenSearch node inside this JVM, for tests only.
 *
 * <p>Usage: {@code LocalOpenSearch <home-dir> <http-port> <transport-port>}. Prints
 * {@code READY http://127.0.0.1:<http-port>} once the node has started, and closes the
 * node when the JVM is asked to stop.
 */
public final class LocalOpenSearch {

    private static final String[] PLUGIN_CLASSES = {
        "org.opensearch.transport.Netty4Plugin",
        "org.opensearch.analysis.common.CommonAnalysisPlugin",
        "org.opensearch.painless.PainlessPlugin",
        "org.opensearch.index.mapper.MapperExtrasPlugin",
        "org.opensearch.knn.plugin.KNNPlugin",
    };

    private static final String LOG_CONFIG = String.join("\n",
        "status = error",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.target = SYSTEM_ERR",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = [%d{ISO8601}][%-5p][%c{1}] %m%n",
        "rootLogger.level = info",
        "rootLogger.appenderRef.console.ref = console",
        "");

    /** Node subclass that exposes the protected constructor taking classpath plugins. */
    private static final class EmbeddedNode extends Node {
        EmbeddedNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
            super(env, plugins, true);
        }
    }

    private LocalOpenSearch() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: LocalOpenSearch <home-dir> <http-port> <transport-port>");
            System.exit(2);
        }
        Path home = Paths.get(args[0]).toAbsolutePath().normalize();
        int httpPort = Integer.parseInt(args[1]);
        int transportPort = Integer.parseInt(args[2]);
        String nodeName = "prme-local";

        Path config = home.resolve("config");
        Path data = home.resolve("data");
        Path logs = home.resolve("logs");
        for (Path dir : List.of(config, data, logs, home.resolve("plugins"), home.resolve("modules"))) {
            Files.createDirectories(dir);
        }
        Files.write(config.resolve("log4j2.properties"), LOG_CONFIG.getBytes(StandardCharsets.UTF_8));

        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", data.toString())
            .put("path.logs", logs.toString())
            .put("cluster.name", "prme-test")
            .put("node.name", nodeName)
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", httpPort)
            .put("transport.port", transportPort)
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .build();

        // LogConfigurator redirects System.out into the logging system; keep the real stdout
        // so that the READY line reaches whoever started this process.
        PrintStream stdout = System.out;

        Environment env = InternalSettingsPreparer.prepareEnvironment(
            settings, Collections.emptyMap(), config, () -> nodeName);
        LogConfigurator.registerErrorListener();
        LogConfigurator.configure(env);

        Node node = new EmbeddedNode(env, loadPlugins());
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
            } catch (IOException e) {
                e.printStackTrace();
            } finally {
                stopped.countDown();
            }
        }, "local-opensearch-shutdown"));

        node.start();
        stdout.println("READY http://127.0.0.1:" + httpPort);
        stdout.flush();
        stopped.await();
    }

    private static List<Class<? extends Plugin>> loadPlugins() {
        List<Class<? extends Plugin>> plugins = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        for (String name : PLUGIN_CLASSES) {
            try {
                plugins.add(Class.forName(name).asSubclass(Plugin.class));
            } catch (ClassNotFoundException | ClassCastException e) {
                missing.add(name + " (" + e + ")");
            }
        }
        if (!missing.isEmpty()) {
            throw new IllegalStateException("OpenSearch plugin classes missing from classpath: " + missing);
        }
        return plugins;
    }
}
