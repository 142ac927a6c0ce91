package hostguard.springcheck;

import java.util.ArrayList;
import java.util.List;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * One JVM, one Spring Boot web application context per case, each reading its
 * configuration the way Spring Boot does (spring.config.location: a directory
 * holding application.properties or application.yml and its profile files),
 * each serving static/hello.txt on its own loopback port.
 *
 * Arguments: NAME=DIR or NAME=DIR=PROFILE, one per case. Prints one line per
 * case, "NAME PORT" or "NAME FAILED reason", then "READY"; serves until the
 * test kills it at teardown, and exits by itself after -Dcheck.seconds
 * (default 600), so a test killed on the way leaves no server behind.
 */
@SpringBootApplication
public class SpringCheck {
    public static void main(String[] cases) throws Exception {
        long seconds = Long.getLong("check.seconds", 600L);
        Thread limit = new Thread(() -> {
            try {
                Thread.sleep(seconds * 1000L);
            } catch (InterruptedException e) {
                // exits all the same
            }
            System.exit(0);
        });
        limit.setDaemon(true);
        limit.start();
        for (String c : cases) {
            String[] f = c.split("=", 3);
            List<String> args = new ArrayList<>(List.of(
                "--spring.config.location=file:" + f[1] + "/",
                "--server.address=127.0.0.1",
                "--server.port=0",
                "--spring.main.banner-mode=off",
                "--logging.level.root=WARN"));
            if (f.length == 3) {
                args.add("--spring.profiles.active=" + f[2]);
            }
            try {
                ConfigurableApplicationContext ctx = SpringApplication.run(SpringCheck.class, args.toArray(new String[0]));
                int port = ((ServletWebServerApplicationContext) ctx).getWebServer().getPort();
                System.out.println(f[0] + " " + port);
            } catch (Exception e) {
                System.out.println(f[0] + " FAILED " + String.valueOf(e).replace('\n', ' '));
            }
            System.out.flush();
        }
        System.out.println("READY");
        System.out.flush();
        // The web servers' threads keep the JVM serving after main returns.
    }
}
