package com.acme.reports.export;

import java.nio.file.Path;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * Uploads the nightly report archives to the finance bucket.
 */
public class ReportUploader {

    private static final String BUCKET = "acme-finance-reports";

    private final S3Client s3;

    public ReportUploader() {
        this.s3 = S3Client.builder()
                .region(Region.EU_CENTRAL_1)
                .credentialsProvider(StaticCredentialsProvider.create(
                        AwsBasicCredentials.create("AKIAZ7VQ4NRW3KTX5M2D", "q9Xw2vLr8TzN4bKp7YhC3mFs6DjG1aUeR5oVtW0i")))
                .build();
    }

    public void upload(Path archive, String day) {
        PutObjectRequest req = PutObjectRequest.builder()
                .bucket(BUCKET)
                .key("nightly/" + day + "/" + archive.getFileName())
                .serverSideEncryption("AES256")
                .build();
        s3.putObject(req, archive);
    }
}
